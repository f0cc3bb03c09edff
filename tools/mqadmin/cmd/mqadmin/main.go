// Command mqadmin administers a Tide (or RocketMQ 4.x) cluster: topics,
// consumer groups, messages, dead letters, transactional half messages and
// replication. Subcommands keep the names and short flags of RocketMQ's
// mqadmin where it has them. Output is a table by default and JSON with
// --json; errors go to stderr with exit status 1 (2 for usage errors).
//
//	mqadmin <command> [flags]
//	mqadmin help [command]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/tools/ops"
)

// Version is set at build time (-ldflags "-X main.Version=...").
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// command is one subcommand. run parses its own flags from args.
type command struct {
	name    string
	group   string
	summary string
	run     func(ctx context.Context, e *cli, args []string) error
}

// commands lists every subcommand, in the order help prints them.
func commands() []command {
	return []command{
		{"clusterList", "cluster", "list the brokers of every cluster", runClusterList},
		{"brokerStatus", "cluster", "role, commit log size, topics and replication of brokers", runBrokerStatus},
		{"haStatus", "cluster", "replication status of masters and slaves", runHAStatus},
		{"topicList", "topic", "list topics", runTopicList},
		{"topicRoute", "topic", "show a topic's route", runTopicRoute},
		{"topicStatus", "topic", "min/max offset and last update of every queue of a topic", runTopicStatus},
		{"updateTopic", "topic", "create or update a topic", runUpdateTopic},
		{"deleteTopic", "topic", "delete a topic from brokers and NameServers", runDeleteTopic},
		{"consumerProgress", "consumer", "a group's committed offset and lag per queue", runConsumerProgress},
		{"consumerConnection", "consumer", "a group's online clients and subscriptions", runConsumerConnection},
		{"producerConnection", "producer", "a producer group's online clients", runProducerConnection},
		{"resetOffsetByTime", "consumer", "move a group's offsets to a point in time (consumers stopped)", runResetOffsetByTime},
		{"queryMsgById", "message", "show a message by offset message id (or unique id with -t)", runQueryMsgByID},
		{"queryMsgByKey", "message", "find messages by key", runQueryMsgByKey},
		{"queryMsgByOffset", "message", "show the message at a queue offset", runQueryMsgByOffset},
		{"sendMessage", "message", "send a message", runSendMessage},
		{"consumeMessage", "message", "print messages of a topic without committing offsets", runConsumeMessage},
		{"dlq", "dlq", "dead letters: dlq list | dlq resend", runDLQ},
		{"half", "half", "transactional half messages: half list | resume | commit | rollback", runHalf},
		{"updateAclConfig", "acl", "create or update an ACL account (admin account needed)", runUpdateACLConfig},
		{"deleteAclConfig", "acl", "delete an ACL account", runDeleteACLConfig},
		{"updateGlobalWhiteAddr", "acl", "replace the ACL's globalWhiteRemoteAddresses", runUpdateGlobalWhiteAddr},
		{"clusterAclConfigVersion", "acl", "the ACL version and checksum of each broker (admin account needed)", runClusterACLVersion},
		{"getControllerMetaData", "controller", "each controller node's group, leader and role (-a controllerAddr)", runGetControllerMetaData},
		{"getSyncStateSet", "controller", "a broker group's master, epochs and replicas in and out of sync", runGetSyncStateSet},
		{"electMaster", "controller", "make an alive in-sync replica of a broker group its master", runElectMaster},
		{"listElections", "controller", "the controller's history of master elections (last 100 per group)", runListElections},
	}
}

// cli carries the process environment of one run, so that tests can run
// subcommands as functions.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// errUsagePrinted: the flag package already reported the mistake.
var errUsagePrinted = &usageError{}

// errFailed: the command printed its own failure details (per-item
// results) and only needs exit status 1.
var errFailed = errors.New("one or more operations failed")

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// run executes one mqadmin invocation and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &cli{stdout: stdout, stderr: stderr, getenv: getenv}
	if len(args) == 0 {
		e.help()
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := lookup(args[1]); ok {
				_ = c.run(ctx, e, []string{"-h"})
				return 0
			}
		}
		e.help()
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "mqadmin", Version)
		return 0
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "mqadmin: unknown command %q (mqadmin help lists them)\n", name)
		return 2
	}
	err := c.run(ctx, e, args[1:])
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		if ue != errUsagePrinted {
			fmt.Fprintf(stderr, "mqadmin %s: %s\n(mqadmin help %s shows the flags)\n", name, ue.msg, name)
		}
		return 2
	case errors.Is(err, errFailed):
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", name, err)
		return 1
	default:
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", name, err)
		return 1
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if strings.EqualFold(c.name, name) {
			return c, true
		}
	}
	// RocketMQ 5's name for replication status.
	if strings.EqualFold(name, "replicationStatus") {
		return lookup("haStatus")
	}
	return command{}, false
}

func (e *cli) help() {
	fmt.Fprintf(e.stderr, "usage: mqadmin <command> [flags]   (mqadmin help <command> for its flags)\n\n")
	tw := tabwriter.NewWriter(e.stderr, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintf(e.stderr, "\nCommon flags: -n namesrvAddr (default $NAMESRV_ADDR), --json, --timeout,\n--access-key/--secret-key (default $TIDE_ACCESS_KEY/$TIDE_SECRET_KEY), --tls, --tls-ca, --tls-cert/--tls-key.\n")
}

// common are the flags every subcommand that talks to a cluster has.
type common struct {
	namesrv string
	json    bool
	timeout time.Duration
	sec     security
}

// flags returns a FlagSet for name with the common flags registered.
func (e *cli) flags(name, usage string) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	co := &common{}
	fs.StringVar(&co.namesrv, "n", e.getenv("NAMESRV_ADDR"), "NameServer addresses, `host:port[;host:port]` (default $NAMESRV_ADDR)")
	fs.BoolVar(&co.json, "json", false, "print JSON instead of a table")
	fs.DurationVar(&co.timeout, "timeout", 5*time.Second, "timeout of each request")
	co.sec.register(fs, e.getenv)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: mqadmin %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs, co
}

// parse parses args, rejecting stray positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsagePrinted
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// require reports the first empty flag value.
func require(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			return usagef("%s is required", pairs[i])
		}
	}
	return nil
}

// admin connects an Admin client to the NameServers of co. The caller
// shuts it down.
func (e *cli) admin(ctx context.Context, co *common) (*mqclient.Admin, error) {
	if strings.TrimSpace(co.namesrv) == "" {
		return nil, usagef("-n namesrvAddr is required (or set NAMESRV_ADDR)")
	}
	opts, err := co.clientOptions()
	if err != nil {
		return nil, err
	}
	a, err := mqclient.NewAdmin(opts...)
	if err != nil {
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// clientOptions are the options of every client of a run: NameServers,
// timeout, credentials and TLS, then extra.
func (co *common) clientOptions(extra ...mqclient.Option) ([]mqclient.Option, error) {
	sec, err := co.sec.options()
	if err != nil {
		return nil, err
	}
	opts := append([]mqclient.Option{
		mqclient.WithNameServers(co.namesrv),
		mqclient.WithRequestTimeout(co.timeout),
		mqclient.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, sec...)
	return append(opts, extra...), nil
}

func shutdown(s interface{ Shutdown(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
}

// emit writes v as indented JSON when asJSON is set, else calls table with
// a tabwriter on stdout (flushed afterwards).
func (e *cli) emit(asJSON bool, v any, table func(tw *tabwriter.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := newTable(e.stdout)
	table(tw)
	return tw.Flush()
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// row writes one tab-separated table row.
func row(tw io.Writer, cols ...any) {
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c)
	}
	fmt.Fprintln(tw)
}

// fmtTime formats a time for tables ("-" for the zero time).
func fmtTime(t time.Time) string {
	if t.IsZero() || t.UnixMilli() <= 0 {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000")
}

// parseTime reads a point in time: Unix milliseconds, "now", RocketMQ's
// yyyy-MM-dd#HH:mm:ss:SSS, or RFC 3339 (ops.ParseTime).
func parseTime(s string) (time.Time, error) { return ops.ParseTime(s) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
