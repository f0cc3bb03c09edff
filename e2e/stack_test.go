package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Ports the daemons listen on inside their containers.
const (
	mariadbPort   = "3306/tcp"
	namesrvPort   = "9876/tcp"
	orderPort     = "8000/tcp"
	inventoryPort = "8002/tcp"
	paymentPort   = "8003/tcp"
	consolePort   = "8080/tcp"
)

// Timing knobs of the system under test: short so scenarios finish in
// seconds, long enough that a loaded 2-core machine pays in time.
const (
	cancelAfter = 12 * time.Second // order.cancel_after
)

// images names every image the suite runs; env overrides for a machine
// that has the official MariaDB/Redis images.
type images struct {
	mariadb, redis, nameserver, controller, broker, order, payment, inventory, console string
}

func imageNames() images {
	tag := envOr("E2E_APP_TAG", "dev")
	return images{
		mariadb:    envOr("MARIADB_IMAGE", "local/mariadb:10.11"),
		redis:      envOr("REDIS_IMAGE", "local/redis:7.0"),
		nameserver: "tide/nameserver:" + tag,
		controller: "tide/controller:" + tag,
		broker:     "tide/broker:" + tag,
		order:      "tide/order:" + tag,
		payment:    "tide/payment:" + tag,
		inventory:  "tide/inventory:" + tag,
		console:    "tide/console:" + tag,
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// node is one container of the stack. Its mapped ports can change when
// the container restarts (a crash fault restarts it through the restart
// policy), so callers ask for the endpoint each time.
type node struct {
	name string
	c    *testcontainers.DockerContainer
	// extra instances started by a scenario are removed by it
}

// stack is the whole system under test on one private network. Methods are
// safe for concurrent use unless noted.
type stack struct {
	root string // repository root
	img  images
	mode string // modeController or modeMasterSlave (E2E_BROKER_MODE)
	nw   *testcontainers.DockerNetwork

	mu    sync.Mutex
	nodes map[string]*node // by name: mariadb, redis, namesrv1, ...
	order []string         // start order, for logs and teardown

	epMu sync.Mutex
	eps  map[string]string // cached "name port" -> host:port
}

// startStack starts every container and returns when all are ready. On
// error the containers started so far are left in s for teardown.
func startStack(ctx context.Context, root string, logw io.Writer) (*stack, error) {
	s := &stack{root: root, img: imageNames(), mode: brokerMode(), nodes: map[string]*node{}, eps: map[string]string{}}
	nw, err := network.New(ctx, network.WithLabels(map[string]string{"org.tidemq.e2e": "true"}))
	if err != nil {
		return s, fmt.Errorf("network: %w", err)
	}
	s.nw = nw

	// MariaDB, Redis and the NameServers do not depend on each other.
	type step struct {
		name string
		run  func(context.Context) error
	}
	parallel := func(steps ...step) error {
		var wg sync.WaitGroup
		errs := make([]error, len(steps))
		for i, st := range steps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				errs[i] = st.run(ctx)
				if errs[i] == nil {
					fmt.Fprintf(logw, "e2e: %s ready (%.1fs)\n", st.name, time.Since(t).Seconds())
				} else {
					errs[i] = fmt.Errorf("%s: %w", st.name, errs[i])
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	first := []step{
		{"mariadb", s.startMariaDB},
		{"redis", s.startRedis},
		{"namesrv1", func(ctx context.Context) error { return s.startNameServer(ctx, "namesrv1") }},
		{"namesrv2", func(ctx context.Context) error { return s.startNameServer(ctx, "namesrv2") }},
	}
	if s.mode == modeController {
		for i, name := range controllerNames {
			first = append(first, step{name, func(ctx context.Context) error { return s.startController(ctx, i) }})
		}
	}
	if err := parallel(first...); err != nil {
		return s, err
	}
	if s.mode == modeController {
		// one after the other: the controllers make the first replica to
		// register the master, and the scenarios expect broker-a
		for i, name := range []string{"broker-a", "broker-a-s"} {
			if err := parallel(step{name, func(ctx context.Context) error { return s.startBroker(ctx, name, i) }}); err != nil {
				return s, err
			}
		}
	} else if err := parallel(
		step{"broker-a", func(ctx context.Context) error { return s.startBroker(ctx, "broker-a", 0) }},
		step{"broker-a-s", func(ctx context.Context) error { return s.startBroker(ctx, "broker-a-s", 1) }},
	); err != nil {
		return s, err
	}
	// inventory first: it creates nothing the others need, but all three
	// create their topics at start; starting them together is fine.
	if err := parallel(
		step{"inventory", func(ctx context.Context) error { return s.startService(ctx, "inventory", "inventory") }},
		step{"payment", func(ctx context.Context) error { return s.startService(ctx, "payment", "payment") }},
		step{"order", func(ctx context.Context) error { return s.startService(ctx, "order", "order") }},
		step{"console", s.startConsole},
	); err != nil {
		return s, err
	}
	return s, nil
}

func (s *stack) add(name string, c *testcontainers.DockerContainer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nodes[name]; !ok {
		s.order = append(s.order, name)
	}
	s.nodes[name] = &node{name: name, c: c}
}

func (s *stack) node(name string) *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[name]
}

// run starts one container on the stack's network under the alias name and
// records it (also when it failed to become ready, so its logs get dumped).
func (s *stack) run(ctx context.Context, name, image string, opts ...testcontainers.ContainerCustomizer) error {
	opts = append([]testcontainers.ContainerCustomizer{
		network.WithNetwork([]string{name}, s.nw),
		testcontainers.WithName(fmt.Sprintf("tide-e2e-%s-%s", s.nw.ID[:8], name)),
		testcontainers.WithLabels(map[string]string{"org.tidemq.e2e": "true"}),
	}, opts...)
	c, err := testcontainers.Run(ctx, image, opts...)
	if c != nil {
		s.add(name, c)
	}
	return err
}

func (s *stack) startMariaDB(ctx context.Context) error {
	return s.run(ctx, "mariadb", s.img.mariadb,
		testcontainers.WithEnv(map[string]string{
			"MARIADB_ROOT_PASSWORD":      "tide-root",
			"MARIADB_DATABASE":           "tide",
			"MARIADB_USER":               "tide",
			"MARIADB_PASSWORD":           "tide",
			"MARIADB_INITDB_SKIP_TZINFO": "1",
		}),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			HostFilePath:      filepath.Join(s.root, "deploy/compose/configs/mariadb-init/00-databases.sql"),
			ContainerFilePath: "/docker-entrypoint-initdb.d/00-databases.sql",
			FileMode:          0o644,
		}),
		testcontainers.WithExposedPorts(mariadbPort),
		// Debian's server logs "port: 3306  Debian 12"; the init-time
		// server logs "port: 0", so this cannot fire early.
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute,
			wait.ForLog(`port: 3306\s`).AsRegexp(),
			wait.ForListeningPort(mariadbPort)),
	)
}

func (s *stack) startRedis(ctx context.Context) error {
	return s.run(ctx, "redis", s.img.redis,
		testcontainers.WithExposedPorts("6379/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForLog("Ready to accept connections")),
		restartOnFailure(),
	)
}

func (s *stack) startNameServer(ctx context.Context, name string) error {
	return s.run(ctx, name, s.img.nameserver,
		testcontainers.WithExposedPorts(namesrvPort),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForLog("nameserver started")),
	)
}

// masterSlaveConf is broker-a's 4.x configuration (E2E_BROKER_MODE=masterslave): the compose demo's keys, with the
// NameServers by alias, brokerIP1 left to the broker (the container's
// address on the private network, which the HA port binds), fast
// transaction check-backs and an authenticated HA port.
func masterSlaveConf(id int) string {
	role := "SYNC_MASTER"
	if id > 0 {
		role = "SLAVE"
	}
	return fmt.Sprintf(`brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=%d
brokerRole=%s
flushDiskType=ASYNC_FLUSH
listenPort=10911
haListenPort=10912
namesrvAddr=namesrv1:9876;namesrv2:9876
storePathRootDir=/data/store
mappedFileSizeCommitLog=67108864
slaveReadEnable=true
transactionTimeOut=3000
transactionCheckInterval=2000
haAuthSecret=e2e-ha-secret-0123456789
`, id, role)
}

func (s *stack) startBroker(ctx context.Context, name string, id int) error {
	conf := masterSlaveConf(id)
	if s.mode == modeController {
		var err error
		if conf, err = controllerModeConf(s.root, name); err != nil {
			return err
		}
	}
	return s.run(ctx, name, s.img.broker,
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader:            strings.NewReader(conf),
			ContainerFilePath: "/etc/tide/broker.conf",
			FileMode:          0o644,
		}),
		testcontainers.WithCmd("-c", "/etc/tide/broker.conf"),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForLog("tide broker ready")),
	)
}

// serviceEnv is the environment of one service container: the
// placeholders of services/<svc>/configs/config.yaml.
func serviceEnv(svc string) map[string]string {
	dsn := func(db string) string {
		return "tide:tide@tcp(mariadb:3306)/" + db + "?parseTime=true&loc=UTC"
	}
	env := map[string]string{
		"REDIS_ADDR":   "redis:6379",
		"NAMESRV_ADDR": "namesrv1:9876;namesrv2:9876",
		"FAULT_ADMIN":  "true",
	}
	switch svc {
	case "order":
		env["MYSQL_DSN"] = dsn("tide_order")
		env["ORDER_MYSQL_DSN"] = dsn("tide_order")
		env["ORDER_CANCEL_AFTER"] = fmt.Sprintf("%ds", int(cancelAfter/time.Second))
		env["ORDER_SWEEP_INTERVAL"] = "3s"
		env["ORDER_INVENTORY_GRPC"] = "inventory:9002" // the catalog that prices orders
	case "payment":
		env["PAYMENT_MYSQL_DSN"] = dsn("tide_payment")
		env["PAYMENT_ORDER_GRPC"] = "order:9000" // read by the "payments" reconciliation job
		env["PAYMENT_RECONCILE_GRACE"] = "5s"
	case "inventory":
		env["INVENTORY_MYSQL_DSN"] = dsn("tide_inventory")
		env["INVENTORY_ORDER_GRPC"] = "order:9000" // read by the "reservations" reconciliation job
		env["INVENTORY_RECONCILE_MIN_AGE"] = "2s"
	}
	return env
}

var servicePorts = map[string]string{"order": orderPort, "payment": paymentPort, "inventory": inventoryPort}

// startService starts service svc (order, payment or inventory) under the
// alias name; a second instance gets another name.
func (s *stack) startService(ctx context.Context, name, svc string) error {
	port := servicePorts[svc]
	return s.run(ctx, name, map[string]string{"order": s.img.order, "payment": s.img.payment, "inventory": s.img.inventory}[svc],
		testcontainers.WithEnv(serviceEnv(svc)),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			HostFilePath:      filepath.Join(envOr("E2E_CONFIG_ROOT", s.root), "services", svc, "configs/config.yaml"),
			ContainerFilePath: "/etc/tide/config.yaml",
			FileMode:          0o644,
		}),
		testcontainers.WithCmd("-conf", "/etc/tide/config.yaml"),
		testcontainers.WithExposedPorts(port),
		// crash faults end the process with exit 3: Docker restarts it, as
		// compose's restart policy does
		restartOnFailure(),
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute,
			wait.ForHTTP("/readyz").WithPort(port).WithPollInterval(200*time.Millisecond)),
	)
}

// startConsole starts the web console with the compose demo's users (one
// per role: viewer, operator, admin; passwords tide-<role>).
func (s *stack) startConsole(ctx context.Context) error {
	return s.run(ctx, "console", s.img.console,
		testcontainers.WithEnv(map[string]string{"NAMESRV_ADDR": "namesrv1:9876;namesrv2:9876", "CONSOLE_LISTEN": ":8080",
			"CONSOLE_USERS_FILE": "/etc/tide/console-users", "CONSOLE_ORDER_URL": "http://order:8000"}),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			HostFilePath:      filepath.Join(s.root, "deploy/compose/configs/console-users"),
			ContainerFilePath: "/etc/tide/console-users",
			FileMode:          0o644,
		}),
		testcontainers.WithExposedPorts(consolePort),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForHTTP("/healthz").WithPort(consolePort)),
	)
}

func restartOnFailure() testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.RestartPolicy = container.RestartPolicy{Name: "on-failure"}
	})
}

// endpoint returns host:port for the container port of node name, cached
// until invalidate (ports change when a container restarts).
func (s *stack) endpoint(ctx context.Context, name, port string) (string, error) {
	key := name + " " + port
	s.epMu.Lock()
	ep, ok := s.eps[key]
	s.epMu.Unlock()
	if ok {
		return ep, nil
	}
	n := s.node(name)
	if n == nil {
		return "", fmt.Errorf("no container %q", name)
	}
	p, err := n.c.MappedPort(ctx, port)
	if err != nil {
		return "", err
	}
	ep = net.JoinHostPort("127.0.0.1", p.Port())
	s.epMu.Lock()
	s.eps[key] = ep
	s.epMu.Unlock()
	return ep, nil
}

func (s *stack) invalidate(name string) {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	for k := range s.eps {
		if strings.HasPrefix(k, name+" ") {
			delete(s.eps, k)
		}
	}
}

// stop stops a container gracefully (SIGTERM, then SIGKILL after timeout);
// kill sends SIGKILL at once. Neither triggers the restart policy.
func (s *stack) stop(ctx context.Context, name string, timeout time.Duration) error {
	s.invalidate(name)
	return s.node(name).c.Stop(ctx, &timeout)
}

func (s *stack) kill(ctx context.Context, name string) error {
	return s.stop(ctx, name, 0)
}

// start starts a stopped container and waits until it is ready again.
// The wait strategies of log lines would match the line of the first
// start at once, so for those it waits for one more occurrence.
func (s *stack) start(ctx context.Context, name string) error {
	marker := readyMarker(name)
	before := s.logCount(ctx, name, marker)
	s.invalidate(name)
	// docker start, not the container's Start: that would also run the
	// wait strategy, and a service's /readyz stays 503 while a dependency
	// (the broker master, Redis) is down, which scenarios do on purpose
	if out, err := exec.CommandContext(ctx, "docker", "start", s.node(name).c.GetContainerID()).CombinedOutput(); err != nil {
		return fmt.Errorf("docker start %s: %w: %s", name, err, out)
	}
	if marker == "" { // a service: wait until its HTTP server answers
		for {
			if err := s.call(ctx, name, "GET", "/healthz", nil, nil, nil); err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: /healthz after restart: %w", name, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	for s.logCount(ctx, name, marker) <= before {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no new %q after restart: %w", name, marker, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func readyMarker(name string) string {
	switch {
	case strings.HasPrefix(name, "broker"):
		return "tide broker ready"
	case strings.HasPrefix(name, "namesrv"):
		return "nameserver started"
	case strings.HasPrefix(name, "controller"):
		return "controller running"
	case name == "redis":
		return "Ready to accept connections"
	case name == "mariadb":
		return "port: 3306 "
	}
	return ""
}

// logCount counts the lines of name's log that contain marker.
func (s *stack) logCount(ctx context.Context, name, marker string) int {
	if marker == "" {
		return 0
	}
	rc, err := s.node(name).c.Logs(ctx)
	if err != nil {
		return 0
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return strings.Count(string(b), marker)
}

// running reports whether the container is running.
func (s *stack) running(ctx context.Context, name string) bool {
	st, err := s.node(name).c.State(ctx)
	return err == nil && st.Running
}

// restarts reports how often Docker restarted the container after a crash.
func (s *stack) restarts(ctx context.Context, name string) (int, error) {
	st, err := s.node(name).c.Inspect(ctx)
	if err != nil {
		return 0, err
	}
	return st.RestartCount, nil
}

// remove terminates and forgets an extra container a scenario started.
func (s *stack) remove(ctx context.Context, name string) error {
	s.mu.Lock()
	n := s.nodes[name]
	delete(s.nodes, name)
	for i, o := range s.order {
		if o == name {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.invalidate(name)
	if n == nil {
		return nil
	}
	return n.c.Terminate(ctx)
}

// dumpLogs writes every container's full log to dir/<name>.log and the
// last tail lines of each to w.
func (s *stack) dumpLogs(ctx context.Context, dir string, tail int, w io.Writer) {
	s.mu.Lock()
	names := append([]string(nil), s.order...)
	nodes := make(map[string]*node, len(s.nodes))
	for k, v := range s.nodes {
		nodes[k] = v
	}
	s.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(w, "e2e: log dir: %v\n", err)
	}
	for _, name := range names {
		rc, err := nodes[name].c.Logs(ctx)
		if err != nil {
			fmt.Fprintf(w, "e2e: logs of %s: %v\n", name, err)
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		path := filepath.Join(dir, name+".log")
		_ = os.WriteFile(path, b, 0o644)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > tail {
			lines = lines[len(lines)-tail:]
		}
		fmt.Fprintf(w, "===== %s (last %d lines; full log %s) =====\n%s\n", name, len(lines), path, strings.Join(lines, "\n"))
	}
}

// teardown terminates every container and the network.
func (s *stack) teardown(ctx context.Context) error {
	s.mu.Lock()
	names := append([]string(nil), s.order...)
	s.mu.Unlock()
	var errs []error
	for i := len(names) - 1; i >= 0; i-- {
		if n := s.node(names[i]); n != nil {
			if err := n.c.Terminate(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", names[i], err))
			}
		}
	}
	if s.nw != nil {
		if err := s.nw.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("network: %w", err))
		}
	}
	return errors.Join(errs...)
}
