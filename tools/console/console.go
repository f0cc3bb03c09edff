// Package console is Tide's web console: a small HTTP server that shows a
// cluster (brokers, topics, consumer groups, messages, dead letters,
// pending half messages and, for the demo, one timeline per order id) by
// querying the NameServers and brokers over the RocketMQ remoting
// protocol. Every page has a JSON twin under /api/. Pages are rendered
// with html/template from embedded files: no CDN, no JavaScript build.
//
// Every page but the sign-in page takes a signed-in user (a users file
// with bcrypt or argon2id hashes, or a trusted authenticating proxy's
// header); each user has a role (viewer, operator, admin) that the server
// checks for every action. Write actions (offset reset, dead letter
// resend, half message decisions) are POST forms; each is audited with
// the signed-in user, in the log and on the admins' audit page, and, for
// half messages, also by the broker.
package console

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
)

// Sentinel errors.
var (
	// ErrInvalidOptions: Options.Validate rejected a field.
	ErrInvalidOptions = errors.New("console: invalid options")
	// ErrState: Start was called twice, or after Shutdown.
	ErrState = errors.New("console: wrong state")
	// ErrBadRequest: a page was asked for with missing or malformed
	// parameters (answered 400).
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound: the thing asked for does not exist (answered 404).
	ErrNotFound = errors.New("not found")
)

// DefaultOrderTopics are the demo's topics whose messages carry the order
// id as a key (api/event/v1).
var DefaultOrderTopics = []string{"order-events", "inventory-events", "payment-events", "order-cancel-timer"}

// Options configures a Server.
type Options struct {
	// ListenAddr is the HTTP host:port; port 0 picks a free one (see Addr).
	ListenAddr string
	// NameServers are the NameServer addresses (host:port).
	NameServers []string
	// ControllerAddrs are the controller nodes (host:port; RocketMQ's
	// controllerAddr) of clusters in controller mode: the controller page
	// shows their leader, each group's master, epoch and SyncStateSet,
	// and the elections the console observed. Optional.
	ControllerAddrs []string
	// RequestTimeout bounds each protocol request. Default 5 s.
	RequestTimeout time.Duration
	// SampleInterval is how often broker totals and topic offsets are
	// sampled to compute TPS. Default 5 s; negative disables sampling
	// (rates are then computed from page views only).
	SampleInterval time.Duration
	// OrderTopics are searched by the order view. Default DefaultOrderTopics.
	OrderTopics []string
	// ReconcileURLs are base URLs of services exposing GET
	// /v1/reconcile/runs?order_id=; the order view shows their answers
	// under the service's name. An entry is "name=URL" (shown as "name
	// service") or a bare URL (shown as "service N"): the page never shows
	// the address. Optional.
	ReconcileURLs []string
	// OrderURL is the base URL of the order service (GET /v1/orders), which
	// feeds the Orders list page. Optional: without it the page only has
	// the order id box.
	OrderURL string
	// ResendRate bounds dead letter resends per second. Default 10.
	ResendRate float64
	// Logger receives request errors and audit records; nil: slog.Default().
	Logger *slog.Logger
	// Credentials sign every protocol request (brokers with aclEnable);
	// zero: unsigned. Every console user acts with this account's rights,
	// so give it what the console must do (admin for topic, group and
	// half-message actions) and protect the console itself.
	Credentials mqclient.Credentials
	// TLS, if not nil, makes every protocol connection TLS with it
	// (clusters with tlsEnable).
	TLS *tls.Config
	// CertFile and KeyFile, if set, make the console serve HTTPS with
	// this PEM certificate (chain) and key, so passwords and session
	// cookies never cross a network in clear.
	CertFile, KeyFile string
	// Auth configures sign-in (required: a users file or a proxy header).
	Auth AuthOptions
	// Now is the clock of sessions, sign-in limits and audit records; nil:
	// time.Now. Tests move it forward.
	Now func() time.Time
}

// DefaultOptions returns the defaults: port 8080 on every interface.
func DefaultOptions() Options {
	return Options{ListenAddr: ":8080", RequestTimeout: 5 * time.Second, SampleInterval: 5 * time.Second,
		OrderTopics: DefaultOrderTopics, ResendRate: 10}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	if len(o.NameServers) == 0 {
		return fmt.Errorf("%w: no NameServer address (flag -n or NAMESRV_ADDR)", ErrInvalidOptions)
	}
	for _, a := range o.NameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: NameServer address %q: %v", ErrInvalidOptions, a, err)
		}
	}
	if _, _, err := net.SplitHostPort(o.ListenAddr); err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrInvalidOptions, o.ListenAddr, err)
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("%w: request timeout must be positive", ErrInvalidOptions)
	}
	if o.ResendRate <= 0 || o.ResendRate > 10000 {
		return fmt.Errorf("%w: resend rate must be in (0, 10000]", ErrInvalidOptions)
	}
	if err := validControllerAddrs(o.ControllerAddrs); err != nil {
		return err
	}
	if (o.Credentials.AccessKey == "") != (o.Credentials.SecretKey == "") {
		return fmt.Errorf("%w: an access key and a secret key go together", ErrInvalidOptions)
	}
	for i, e := range o.ReconcileURLs {
		if _, u := serviceURL(e, i); !httpURL(u) {
			return fmt.Errorf("%w: reconcile URL %q must start with http:// or https://", ErrInvalidOptions, u)
		}
	}
	if o.OrderURL != "" && !httpURL(o.OrderURL) {
		return fmt.Errorf("%w: order service URL %q must start with http:// or https://", ErrInvalidOptions, o.OrderURL)
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return fmt.Errorf("%w: a certificate and a key go together (-cert, -key)", ErrInvalidOptions)
	}
	return o.Auth.Validate()
}

func httpURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// serviceURL splits a ReconcileURLs entry ("name=URL" or a bare URL, the
// i-th) into the name shown to users and the URL.
func serviceURL(e string, i int) (name, u string) {
	if n, rest, ok := strings.Cut(e, "="); ok && !strings.Contains(n, "/") && httpURL(rest) {
		return strings.TrimSpace(n) + " service", rest
	}
	return fmt.Sprintf("service %d", i+1), e
}

// Server is the console daemon: New, Start, Shutdown. Its methods are safe
// for concurrent use.
type Server struct {
	opts  Options
	log   *slog.Logger
	admin *mqclient.Admin
	pull  *mqclient.PullConsumer
	prod  *mqclient.Producer
	rates *sampler
	pages *pages
	ctlRC *remoting.Client         // the controller client's transport
	ctl   *controllerclient.Client // nil without ControllerAddrs
	// elections is the log of master epoch changes the console observed
	elections electionLog
	http      *http.Client

	mu      sync.Mutex
	state   int // 0 new, 1 running, 2 stopped
	srv     *http.Server
	ln      net.Listener
	stop    chan struct{}
	wg      sync.WaitGroup
	resendM sync.Mutex // one resend batch at a time keeps the rate limit global

	users    *userStore // nil: proxy sign-in only
	sessions *sessions
	limiter  *loginLimiter
	audits   auditLog
	secure   bool // cookies are Secure
	cert     *tls.Certificate
	now      func() time.Time
}

// New validates opts and builds a Server; it connects to nothing yet.
func New(opts Options) (*Server, error) {
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 5 * time.Second
	}
	if opts.SampleInterval == 0 {
		opts.SampleInterval = 5 * time.Second
	}
	if opts.ResendRate == 0 {
		opts.ResendRate = 10
	}
	if opts.OrderTopics == nil {
		opts.OrderTopics = DefaultOrderTopics
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Auth.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pg, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, pages: pg, rates: newSampler(), stop: make(chan struct{}),
		http: &http.Client{Timeout: opts.RequestTimeout}, now: opts.Now, secure: opts.CertFile != "" || opts.Auth.SecureCookies,
		sessions: newSessions(opts.Auth.IdleTimeout, opts.Auth.MaxSession, opts.Now),
		limiter:  newLoginLimiter(opts.Auth.LoginAttempts, opts.Auth.LoginWindow)}
	if opts.Auth.UsersFile != "" {
		if s.users, err = openUserStore(opts.Auth.UsersFile); err != nil {
			return nil, err
		}
	}
	if opts.CertFile != "" {
		c, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: console certificate: %v", ErrInvalidOptions, err)
		}
		s.cert = &c
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	common := []mqclient.Option{mqclient.WithNameServers(opts.NameServers...), mqclient.WithRequestTimeout(opts.RequestTimeout),
		mqclient.WithLogger(quiet)}
	if opts.Credentials.AccessKey != "" {
		common = append(common, mqclient.WithCredentials(opts.Credentials))
	}
	if opts.TLS != nil {
		common = append(common, mqclient.WithTLS(opts.TLS))
	}
	if s.admin, err = mqclient.NewAdmin(common...); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	// The controller port speaks plain TCP with no ACL (docs/controller.md),
	// so neither the TLS nor the credentials apply to it.
	s.ctlRC = remoting.NewClient(remoting.ClientOptions{Logger: quiet})
	s.ctl = newControllerClient(s)
	instance := mqclient.WithInstanceName(fmt.Sprintf("tide-console-%d", time.Now().UnixNano()))
	if s.pull, err = mqclient.NewPullConsumer("TOOLS_CONSUMER", append(common, instance)...); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if s.prod, err = mqclient.NewProducer(append(common, instance, mqclient.WithProducerGroup("TOOLS_PRODUCER"),
		mqclient.WithSendTimeout(opts.RequestTimeout))...); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return s, nil
}

// Start starts the protocol clients, listens on ListenAddr and serves in
// the background until Shutdown. It returns once the listener is open.
// The NameServers need not be reachable yet: pages report the error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 0 {
		return ErrState
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("console: listen: %w", err)
	}
	for _, c := range []interface{ Start(context.Context) error }{s.admin, s.pull, s.prod} {
		if err := c.Start(ctx); err != nil {
			ln.Close()
			return fmt.Errorf("console: %w", err)
		}
	}
	if s.cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*s.cert}, MinVersion: tls.VersionTLS12})
	}
	s.ln = ln
	s.state = 1
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("console: serve", "err", err)
		}
	}()
	if s.opts.SampleInterval > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.sampleLoop()
		}()
	}
	s.log.Info("console started", "addr", ln.Addr().String(), "tls", s.cert != nil, "namesrv", strings.Join(s.opts.NameServers, ";"),
		"usersFile", s.opts.Auth.UsersFile, "proxyHeader", s.opts.Auth.ProxyHeader)
	return nil
}

// Addr returns the HTTP address being listened on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting requests, lets running ones finish (bounded by
// ctx), stops sampling and closes the protocol clients. Safe to call more
// than once and before Start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.state == 2 {
		s.mu.Unlock()
		return nil
	}
	running := s.state == 1
	s.state = 2
	close(s.stop)
	s.mu.Unlock()
	var err error
	if running {
		err = s.srv.Shutdown(ctx)
	}
	s.wg.Wait()
	for _, c := range []interface{ Shutdown(context.Context) error }{s.prod, s.pull, s.admin} {
		_ = c.Shutdown(ctx)
	}
	s.ctlRC.Close()
	s.log.Info("console stopped")
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// sampleLoop samples rates every SampleInterval until Shutdown.
func (s *Server) sampleLoop() {
	t := time.NewTicker(s.opts.SampleInterval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.SampleInterval+s.opts.RequestTimeout)
		s.sample(ctx)
		cancel()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}
