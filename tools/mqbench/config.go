package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Config is one run's parameters (flags).
type Config struct {
	Target    string        `json:"target"`
	Addr      string        `json:"addr"`
	Mode      string        `json:"mode"` // produce, consume, backlog, e2e
	Send      string        `json:"send"` // sync, async, oneway, batch
	Size      int           `json:"size"`
	Producers int           `json:"producers"`
	Inflight  int           `json:"inflight"`
	Batch     int           `json:"batch"`
	Rate      float64       `json:"rate"` // total msgs/s, 0 = as fast as possible
	Duration  time.Duration `json:"duration_ns"`
	Count     int64         `json:"count"`
	Topics    int           `json:"topics"`
	Queues    int           `json:"queues"`
	Prefix    string        `json:"prefix"`
	Group     string        `json:"group"`
	Consumers int           `json:"consumers"`
	Pull      int           `json:"pull_batch"`
	Warmup    time.Duration `json:"warmup_ns"`
	Label     string        `json:"label,omitempty"`
	Keep      bool          `json:"keep,omitempty"`
	// NoIdempotence turns pkg/mqclient's idempotent sends off (tide).
	NoIdempotence bool `json:"no_idempotence,omitempty"`
	// Linger and BatchBytes set pkg/mqclient's auto-batching of async
	// sends (WithAutoBatch; tide; Linger 0 turns it off).
	Linger     time.Duration `json:"linger_ns,omitempty"`
	BatchBytes int           `json:"batch_bytes,omitempty"`
	// Headers is the request header serialize type pkg/mqclient sends:
	// binary (ROCKETMQ, its default) or json (WithJSONHeaders; tide).
	Headers string `json:"headers,omitempty"`
	// ServerVersion names the tide build under test (its client cannot ask).
	ServerVersion string `json:"-"`
	ServerPids    string `json:"-"`

	// Flags that are not part of the result.
	JSONOut    string        `json:"-"`
	Quiet      bool          `json:"-"`
	RateOf     string        `json:"-"`
	RateFactor float64       `json:"-"`
	Timeout    time.Duration `json:"-"`
	// TraceOut receives a runtime/trace of this process (client and
	// consumer) for TraceFor from the end of the warm-up.
	TraceOut string        `json:"-"`
	TraceFor time.Duration `json:"-"`
	// MemProfile receives the process's allocation profile (pprof
	// "allocs": everything allocated since start) at the end of the run.
	MemProfile string `json:"-"`
	// CPUProfile receives a CPU profile of the process for the whole run.
	CPUProfile string `json:"-"`
}

func parseConfig(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("mqbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Target, "target", "tide", "broker kind: `tide`, tide-official (a Tide or RocketMQ broker driven by the official Go client), nats or redis")
	fs.StringVar(&c.Addr, "addr", "", "tide: NameServer host:port (default 127.0.0.1:9876); nats: URL (default nats://127.0.0.1:4222); redis: host:port (default 127.0.0.1:6379)")
	fs.StringVar(&c.Mode, "mode", "produce", "`mode`: produce, consume, backlog (preload -count, then time the drain) or e2e (produce + consume, end-to-end latency)")
	fs.StringVar(&c.Send, "send", "async", "send `kind`: sync, async, oneway or batch")
	fs.IntVar(&c.Size, "size", 1024, "message body `bytes` (at least 16)")
	fs.IntVar(&c.Producers, "producers", 1, "producer instances (each its own connection)")
	fs.IntVar(&c.Inflight, "inflight", 1, "per producer: sends in flight (async window; sync, batch: sending goroutines)")
	fs.IntVar(&c.Batch, "batch", 64, "messages per batch (-send batch, and the backlog preload)")
	fs.Float64Var(&c.Rate, "rate", 0, "total target `msgs/s` over all producers (0 = as fast as possible)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "produce for this long (unless -count is reached first)")
	fs.Int64Var(&c.Count, "count", 0, "stop after this many messages (backlog: the backlog size; 0 = by -duration)")
	fs.IntVar(&c.Topics, "topics", 1, "topics (streams) to spread messages over, round robin")
	fs.IntVar(&c.Queues, "queues", 8, "queues per topic (tide)")
	fs.StringVar(&c.Prefix, "prefix", "", "topic name prefix (default mqbench-<time>, so every run starts empty)")
	fs.StringVar(&c.Group, "group", "", "consumer group (default <prefix>-g)")
	fs.IntVar(&c.Consumers, "consumers", 1, "consumer instances")
	fs.IntVar(&c.Pull, "pull", 256, "messages per pull/fetch/XREADGROUP (tide: per pull request, capped by the broker at 32 by default)")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "produce/e2e: discard this first part of the run from the results")
	fs.StringVar(&c.Label, "label", "", "free text recorded in the result (e.g. the server's durability setting)")
	fs.StringVar(&c.ServerVersion, "server-version", "", "tide: the broker build's version, recorded in the result")
	fs.StringVar(&c.ServerPids, "server-pids", "", "`pids` of the server processes (comma-separated): their CPU time is recorded per message")
	fs.BoolVar(&c.Keep, "keep", false, "do not delete the topics at the end")
	fs.BoolVar(&c.NoIdempotence, "no-idempotence", false, "tide: send without pkg/mqclient's idempotent-producer stamps (to measure their cost)")
	fs.DurationVar(&c.Linger, "linger", time.Millisecond, "tide: auto-batch async sends to one queue for up to this long (pkg/mqclient WithAutoBatch, whose default this is; 0 = off)")
	fs.IntVar(&c.BatchBytes, "batch-bytes", 0, "tide, with -linger: send an auto-batch once it holds this many `bytes` (0 = the client's default, 32 KiB)")
	fs.StringVar(&c.Headers, "headers", "binary", "tide: request header serialize `type`: binary (ROCKETMQ, pkg/mqclient's default) or json (WithJSONHeaders, as the official client)")
	fs.StringVar(&c.JSONOut, "json", "", "also write the result as JSON to this `file` (- = stdout, text then goes to stderr)")
	fs.BoolVar(&c.Quiet, "q", false, "no progress lines")
	fs.StringVar(&c.RateOf, "rate-of", "", "take -rate from this earlier result `file` (its produce msgs/s times -rate-factor)")
	fs.Float64Var(&c.RateFactor, "rate-factor", 0.5, "multiplier for -rate-of")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "abort the run after this long")
	fs.StringVar(&c.TraceOut, "trace", "", "write a runtime/trace of mqbench (producers and consumers) to this `file`, from the end of the warm-up for -trace-for (go tool trace reads it)")
	fs.DurationVar(&c.TraceFor, "trace-for", 2*time.Second, "how long -trace traces")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of mqbench (the whole run, set-up included) to this `file` (go tool pprof reads it)")
	fs.StringVar(&c.MemProfile, "memprofile", "", "write mqbench's allocation profile (pprof allocs, the whole run) to this `file` at the end (go tool pprof -sample_index=alloc_space reads it)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.Addr == "" {
		c.Addr = map[string]string{"tide": "127.0.0.1:9876", "tide-official": "127.0.0.1:9876", "nats": "nats://127.0.0.1:4222", "redis": "127.0.0.1:6379"}[c.Target]
	}
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("mqbench-%d", time.Now().UnixNano()/1e6)
	}
	if c.Group == "" {
		c.Group = c.Prefix + "-g"
	}
	if c.RateOf != "" {
		r, err := readResult(c.RateOf)
		if err != nil {
			return c, fmt.Errorf("-rate-of: %w", err)
		}
		p := r.Phase("produce")
		if p == nil || p.MsgsPerSec <= 0 {
			return c, fmt.Errorf("-rate-of %s: no produce rate in it", c.RateOf)
		}
		c.Rate = p.MsgsPerSec * c.RateFactor
	}
	if _, err := parsePids(c.ServerPids); err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	switch {
	case c.Mode != "produce" && c.Mode != "consume" && c.Mode != "backlog" && c.Mode != "e2e":
		return fmt.Errorf("-mode %q: want produce, consume, backlog or e2e", c.Mode)
	case c.Send != "sync" && c.Send != "async" && c.Send != "oneway" && c.Send != "batch":
		return fmt.Errorf("-send %q: want sync, async, oneway or batch", c.Send)
	case c.Size < 16:
		return errors.New("-size must be at least 16 (the body carries a send timestamp)")
	case c.Producers < 1 || c.Inflight < 1 || c.Batch < 1 || c.Topics < 1 || c.Queues < 1 || c.Consumers < 1 || c.Pull < 1:
		return errors.New("-producers, -inflight, -batch, -topics, -queues, -consumers and -pull must be >= 1")
	case c.Headers != "binary" && c.Headers != "json":
		return fmt.Errorf("-headers %q: want binary or json", c.Headers)
	case c.Linger < 0 || c.BatchBytes < 0:
		return errors.New("-linger and -batch-bytes must be >= 0")
	case c.Rate < 0:
		return errors.New("-rate must be >= 0")
	case c.Mode == "backlog" && c.Count <= 0:
		return errors.New("-mode backlog needs -count")
	case c.Mode == "consume" && c.Count <= 0:
		return errors.New("-mode consume needs -count (messages to drain)")
	case c.Count <= 0 && c.Duration <= 0:
		return errors.New("need -duration or -count")
	}
	return nil
}

func (c *Config) topicNames() []string {
	ts := make([]string, c.Topics)
	for i := range ts {
		ts[i] = fmt.Sprintf("%s-%d", c.Prefix, i)
	}
	return ts
}

func readResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
