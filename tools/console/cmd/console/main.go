// Command console serves Tide's web console.
//
//	console -n namesrv:9876[;namesrv2:9876] -users users.txt [-listen :8080] [-cert c.pem -key k.pem] [-reconcile http://order:8000,...]
//	console user add|passwd|role|del|list -users users.txt ...
//
// Sign-in is required: a users file (-users; "console user add" writes
// it), or the user header of an authenticating proxy (-auth-proxy-header,
// believed only from -auth-proxy-trusted addresses), or both. -cert and
// -key serve HTTPS.
//
// Every flag has an environment variable (NAMESRV_ADDR, CONTROLLER_ADDR, CONSOLE_LISTEN,
// CONSOLE_ORDER_TOPICS, CONSOLE_RECONCILE_URLS, CONSOLE_ACCESS_KEY,
// CONSOLE_SECRET_KEY, CONSOLE_USERS_FILE, CONSOLE_AUTH_PROXY_*,
// CONSOLE_CERT_FILE, CONSOLE_KEY_FILE); flags win. -tls, -tls-ca, -tls-cert/-tls-key and
// -tls-server-name connect to a TLS cluster. SIGINT or
// SIGTERM shut it down gracefully. -healthcheck host:port probes a running
// console (the images are FROM scratch: no curl).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
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
	var err error
	if len(os.Args) > 1 && os.Args[1] == "user" {
		err = userCmd(os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil)
	}
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
	controllers := fs.String("controllerAddr", env("CONTROLLER_ADDR", ""),
		"controller addresses `host:port[;host:port]` of a cluster in controller mode: the Controller page ($CONTROLLER_ADDR)")
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
	healthcheck := fs.String("healthcheck", "", "probe a console at `host:port` or https://host:port (GET /healthz) and exit 0 if it answers (container healthchecks)")
	users := fs.String("users", env("CONSOLE_USERS_FILE", ""), "users `file` for sign-in, written by `console user add` ($CONSOLE_USERS_FILE)")
	proxyHeader := fs.String("auth-proxy-header", env("CONSOLE_AUTH_PROXY_HEADER", ""),
		"request `header` naming the user, set by an authenticating reverse proxy; off by default ($CONSOLE_AUTH_PROXY_HEADER)")
	proxyRole := fs.String("auth-proxy-role-header", env("CONSOLE_AUTH_PROXY_ROLE_HEADER", ""),
		"request `header` carrying the proxied user's role ($CONSOLE_AUTH_PROXY_ROLE_HEADER)")
	proxyDefault := fs.String("auth-proxy-default-role", env("CONSOLE_AUTH_PROXY_DEFAULT_ROLE", "viewer"),
		"`role` of proxied users without a role header or users file entry ($CONSOLE_AUTH_PROXY_DEFAULT_ROLE)")
	proxyTrusted := fs.String("auth-proxy-trusted", env("CONSOLE_AUTH_PROXY_TRUSTED", ""),
		"comma-separated `CIDRs` or addresses of the proxies whose header is believed ($CONSOLE_AUTH_PROXY_TRUSTED)")
	idle := fs.Duration("session-idle", 30*time.Minute, "sign a session out after this long unused")
	maxSession := fs.Duration("session-max", 12*time.Hour, "sign a session out this long after sign-in")
	attempts := fs.Int("login-attempts", 5, "failed sign-ins of one user per -login-window (4x per client address)")
	window := fs.Duration("login-window", 15*time.Minute, "window of -login-attempts")
	cert := fs.String("cert", env("CONSOLE_CERT_FILE", ""), "serve HTTPS with this certificate (chain) PEM `file` ($CONSOLE_CERT_FILE)")
	key := fs.String("key", env("CONSOLE_KEY_FILE", ""), "its private key PEM `file` ($CONSOLE_KEY_FILE)")
	secureCookies := fs.Bool("secure-cookies", false, "mark session cookies Secure although serving HTTP (TLS ends at a proxy in front)")
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
	o.ControllerAddrs = split(*controllers, ";")
	o.ListenAddr, o.OrderTopics, o.ReconcileURLs, o.OrderURL = *listen, split(*topics, ","), split(*reconcile, ","), *orderURL
	o.RequestTimeout, o.SampleInterval, o.ResendRate, o.Logger = *timeout, *sample, *rate, logger
	o.Credentials = mqclient.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}
	o.CertFile, o.KeyFile = *cert, *key
	o.Auth = console.AuthOptions{UsersFile: *users, ProxyHeader: *proxyHeader, ProxyRoleHeader: *proxyRole, IdleTimeout: *idle,
		MaxSession: *maxSession, LoginAttempts: *attempts, LoginWindow: *window, SecureCookies: *secureCookies}
	if *proxyHeader != "" {
		if o.Auth.ProxyDefaultRole, err = console.ParseRole(*proxyDefault); err != nil {
			return fmt.Errorf("-auth-proxy-default-role: %w", err)
		}
	}
	if o.Auth.TrustedProxies, err = prefixes(split(*proxyTrusted, ",")); err != nil {
		return err
	}
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

// prefixes parses CIDRs and bare addresses (a /32 or /128).
func prefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("-auth-proxy-trusted: %q is neither a CIDR nor an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// probe GETs http://addr/healthz (or https://host:port/healthz, not
// verifying the certificate: it checks that this process answers) and
// succeeds on 200 OK.
func probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	u := "http://" + addr + "/healthz"
	client := http.DefaultClient
	if rest, ok := strings.CutPrefix(addr, "https://"); ok {
		u = "https://" + rest + "/healthz"
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec: liveness of a local process
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
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
