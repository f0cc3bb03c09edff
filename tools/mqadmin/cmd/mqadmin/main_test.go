package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
)

// harness is one in-process NameServer and broker.
type harness struct {
	ns     string
	broker *broker.Broker
}

func start(t *testing.T) *harness {
	t.Helper()
	ns := nameservertest.Start(t)
	return &harness{ns: ns, broker: brokertest.Start(t, ns)}
}

// result is the outcome of one mqadmin invocation.
type result struct {
	code           int
	stdout, stderr string
}

// mqadmin runs one invocation with NAMESRV_ADDR pointing at h (h may be
// nil: no NameServer).
func (h *harness) mqadmin(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "NAMESRV_ADDR" && h != nil {
			return h.ns
		}
		return ""
	}
	code := run(ctx, args, &out, &errb, env)
	return result{code, out.String(), errb.String()}
}

// ok runs an invocation that must succeed.
func (h *harness) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := h.mqadmin(t, args...)
	if r.code != 0 {
		t.Fatalf("mqadmin %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// okJSON runs an invocation with --json and decodes its output into v.
func (h *harness) okJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := h.ok(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("mqadmin %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs an invocation that must exit with code and mention want on
// stderr.
func (h *harness) fails(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	r := h.mqadmin(t, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("mqadmin %s: exit %d (want %d), stderr %q (want %q)\nstdout:\n%s", strings.Join(args, " "), r.code, code, r.stderr, want, r.stdout)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) admin(t *testing.T) *mqclient.Admin {
	t.Helper()
	a, err := mqclient.NewAdmin(mqclient.WithNameServers(h.ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(a) })
	return a
}

func (h *harness) createTopic(t *testing.T, topic string, queues int) {
	t.Helper()
	q := strconv.Itoa(queues)
	h.ok(t, "updateTopic", "-b", h.broker.Addr(), "-t", topic, "-r", q, "-w", q)
}

func TestUsageErrors(t *testing.T) {
	var none *harness
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, 2, "usage: mqadmin"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"topicRoute", "-zz"}, 2, "flag provided but not defined: -zz"},
		{"missing topic", []string{"topicRoute", "-n", "127.0.0.1:1"}, 2, "-t topic is required"},
		{"missing namesrv", []string{"topicRoute", "-t", "x"}, 2, "-n namesrvAddr is required"},
		{"stray argument", []string{"clusterList", "extra"}, 2, `unexpected argument "extra"`},
		{"updateTopic needs a target", []string{"updateTopic", "-t", "x"}, 2, "exactly one of -c cluster or -b brokerAddr"},
		{"bad perm", []string{"updateTopic", "-t", "x", "-c", "c", "-p", "7"}, 2, "-p must be 2, 4 or 6"},
		{"bad time", []string{"resetOffsetByTime", "-g", "g", "-t", "t", "-s", "yesterday"}, 2, "bad time"},
		{"half needs operator", []string{"half", "commit", "-b", "127.0.0.1:1", "-o", "0"}, 2, "--operator is required"},
		{"half needs subcommand", []string{"half"}, 2, "want a subcommand"},
		{"dlq unknown subcommand", []string{"dlq", "purge"}, 2, `unknown dlq subcommand "purge"`},
		{"dlq bad rate", []string{"dlq", "resend", "-g", "g", "--rate", "0"}, 2, "--rate must be"},
		{"unreachable NameServer", []string{"clusterList", "-n", "127.0.0.1:1", "--timeout", "500ms"}, 1, "no name server reachable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { none.fails(t, c.code, c.want, c.args...) })
	}
	if r := none.mqadmin(t, "help", "topicStatus"); r.code != 0 || !strings.Contains(r.stderr, "-t") {
		t.Fatalf("help topicStatus: %+v", r)
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1700000000123", 1700000000123, true},
		{"2023-11-14T22:13:20Z", 1700000000000, true},
		{"soon", 0, false},
		{"12abc", 0, false},
	}
	for _, c := range cases {
		got, err := parseTime(c.in)
		if (err == nil) != c.ok || (c.ok && got.UnixMilli() != c.want) {
			t.Errorf("parseTime(%q) = %v, %v", c.in, got.UnixMilli(), err)
		}
	}
	if _, err := parseTime("2024-01-02#03:04:05:006"); err != nil {
		t.Errorf("RocketMQ layout: %v", err)
	}
}

func fromJSON(s string, v any) error { return json.Unmarshal([]byte(s), v) }
