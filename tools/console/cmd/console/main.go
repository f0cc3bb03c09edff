// Command console serves Tide's web console.
//
//	console -n namesrv:9876[;namesrv2:9876] [-listen :8080] [-reconcile http://order:8000,...]
//
// Every flag has an environment variable (NAMESRV_ADDR, CONSOLE_LISTEN,
// CONSOLE_ORDER_TOPICS, CONSOLE_RECONCILE_URLS, CONSOLE_ACCESS_KEY,
// CONSOLE_SECRET_KEY); flags win. -tls, -tls-ca, -tls-cert/-tls-key and
// -tls-server-name connect to a TLS cluster. SIGINT or
// SIGTERM shut it down gracefully. -healthcheck host:port probes a running
// console (the images are FROM scratch: no curl).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/tools/console"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

// run parses args, starts the console, calls started (if not nil) with
// its address, serves until ctx is done and shuts down.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(addr string)) error {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := console.DefaultOptions()
	namesrv := fs.String("n", env("NAMESRV_ADDR", ""), "NameServer addresses `host:port[;host:port]` ($NAMESRV_ADDR)")
	listen := fs.String("listen", env("CONSOLE_LISTEN", d.ListenAddr), "HTTP listen `address` ($CONSOLE_LISTEN)")
	topics := fs.String("order-topics", env("CONSOLE_ORDER_TOPICS", strings.Join(d.OrderTopics, ",")),
		"comma-separated `topics` the order view searches ($CONSOLE_ORDER_TOPICS)")
	reconcile := fs.String("reconcile", env("CONSOLE_RECONCILE_URLS", ""),
		"comma-separated `name=URL` entries (or bare URLs) of services serving GET /v1/reconcile/runs?order_id=, shown in the order view ($CONSOLE_RECONCILE_URLS)")
	orderURL := fs.String("order-url", env("CONSOLE_ORDER_URL", ""),
		"order service base `URL` serving GET /v1/orders, for the Orders list ($CONSOLE_ORDER_URL)")
	timeout := fs.Duration("timeout", d.RequestTimeout, "timeout of each protocol request")
	sample := fs.Duration("sample", d.SampleInterval, "TPS sampling interval (negative: off)")
	rate := fs.Float64("resend-rate", d.ResendRate, "maximum dead letter resends per second")
	accessKey := fs.String("access-key", env("CONSOLE_ACCESS_KEY", ""), "ACL access key signing every request ($CONSOLE_ACCESS_KEY)")
	secretKey := fs.String("secret-key", env("CONSOLE_SECRET_KEY", ""), "ACL secret key ($CONSOLE_SECRET_KEY; prefer the variable, flags show in ps)")
	useTLS := fs.Bool("tls", false, "connect to NameServers and brokers over TLS (implied by the other -tls-* flags)")
	tlsCA := fs.String("tls-ca", "", "PEM `file` of the CA(s) to trust instead of the system roots")
	tlsCert := fs.String("tls-cert", "", "client certificate PEM `file`, for brokers with tlsClientAuth")
	tlsKey := fs.String("tls-key", "", "client key PEM `file` (with -tls-cert)")
	tlsServerName := fs.String("tls-server-name", "", "`name` to verify in server certificates (default: the dialled host)")
	healthcheck := fs.String("healthcheck", "", "probe a console at `host:port` (GET /healthz) and exit 0 if it answers (container healthchecks)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *healthcheck != "" {
		return probe(ctx, *healthcheck)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	var err error
	o := d
	o.NameServers = split(*namesrv, ";")
	o.ListenAddr, o.OrderTopics, o.ReconcileURLs, o.OrderURL = *listen, split(*topics, ","), split(*reconcile, ","), *orderURL
	o.RequestTimeout, o.SampleInterval, o.ResendRate, o.Logger = *timeout, *sample, *rate, logger
	o.Credentials = mqclient.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}
	if *useTLS || *tlsCA != "" || *tlsCert != "" || *tlsKey != "" || *tlsServerName != "" {
		if (*tlsCert == "") != (*tlsKey == "") {
			return errors.New("-tls-cert and -tls-key go together")
		}
		if o.TLS, err = remoting.ClientTLSFiles(*tlsCA, *tlsCert, *tlsKey, *tlsServerName); err != nil {
			return err
		}
	}
	s, err := console.New(o)
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	if started != nil {
		started(s.Addr())
	}
	<-ctx.Done()
	logger.Info("signal received, shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}

// probe GETs http://addr/healthz and succeeds on 200 OK.
func probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s", addr, resp.Status)
	}
	return nil
}

// split cuts a list on sep, dropping blanks.
func split(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
