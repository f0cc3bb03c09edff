// Package testenv gives tests real MariaDB and Redis servers on loopback,
// never mocks. By default it starts private servers from the Debian
// binaries (mariadb-server and redis-server packages; .ci/run installs
// them) in temporary directories, once per test binary, and gives each
// test its own database. Set TIDE_TEST_MYSQL_DSN (a DSN without a
// database name, e.g. "root:pw@tcp(127.0.0.1:3306)/") or
// TIDE_TEST_REDIS_ADDR to use servers that already run instead.
//
// When neither a binary nor the variable is available the test fails with
// a message that says what to install: a missing server never passes as a
// green run.
//
// Servers started here die with the test process (Linux parent-death
// signal); call Cleanup from TestMain to also remove their directories.
package testenv

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tidemq/tide/pkg/testenv/freeport"
)

var (
	mu       sync.Mutex
	maria    *mariaServer
	mariaErr error
	dirs     []string
	dbSeq    int
)

// Cleanup stops the servers this package started and removes their
// directories. Call it at the end of TestMain; it is optional.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if maria != nil && maria.cmd != nil && maria.cmd.Process != nil {
		maria.cmd.Process.Kill()
		maria.cmd.Wait()
	}
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	dirs = nil
}

// Main is a package's TestMain for tests that start MariaDB or Redis:
// it runs the tests, stops the servers (Cleanup) and exits with the
// tests' code.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// FreeAddr returns a 127.0.0.1 address for a server the test starts
// later: its port was free at the time of the call and lies outside the
// kernel's ephemeral range, so no outgoing connection takes it meanwhile
// (package freeport).
func FreeAddr(t testing.TB) string {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// FreePort is FreeAddr's port, for a server configured by port alone
// (one that binds it again after a restart keeps it from the kernel's
// ephemeral range too).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lookBin(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"} {
			if p := filepath.Join(dir, n); fileExists(p) {
				return p
			}
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func deathSig() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

func waitTCP(addr string, d time.Duration) error { return waitDial("tcp", addr, d) }

// waitDial waits until a connection to addr on network succeeds.
func waitDial(network, addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout(network, addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reachable after %s: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type mariaServer struct {
	baseDSN string // no database
	cmd     *exec.Cmd
}

func startMaria() (*mariaServer, error) {
	if dsn := os.Getenv("TIDE_TEST_MYSQL_DSN"); dsn != "" {
		return &mariaServer{baseDSN: dsn}, nil
	}
	mariadbd := lookBin("mariadbd", "mysqld")
	install := lookBin("mariadb-install-db", "mysql_install_db")
	if mariadbd == "" || install == "" {
		return nil, fmt.Errorf("no MariaDB server: install it (apt-get install mariadb-server) or set TIDE_TEST_MYSQL_DSN")
	}
	dir, err := os.MkdirTemp("", "tide-mariadb-")
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, dir)
	data := filepath.Join(dir, "data")
	// A private tmpdir: test binaries of several packages start their own
	// servers at the same time, and a shared /tmp made concurrent
	// bootstraps clash on temporary tables.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	srvArgs := []string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=128M", "--max-connections=500", "--log-error=" + filepath.Join(dir, "error.log"),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid")}
	if os.Geteuid() == 0 {
		srvArgs = append(srvArgs, "--user=root")
	}
	cmd := exec.Command(mariadbd, srvArgs...)
	cmd.SysProcAttr = deathSig()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitTCP(addr, 60*time.Second); err != nil {
		cmd.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return nil, fmt.Errorf("mariadbd: %w\n%s", err, log)
	}
	// The setup below goes through the unix socket, which mariadbd may
	// start accepting on a moment after the TCP port: wait for it too
	// (setup failed with "connection refused" on the socket now and then).
	sock := filepath.Join(dir, "mysqld.sock")
	if err := waitDial("unix", sock, 60*time.Second); err != nil {
		cmd.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return nil, fmt.Errorf("mariadbd socket: %w\n%s", err, log)
	}
	// root@localhost has no password; over TCP from 127.0.0.1 with
	// skip-name-resolve it is root@127.0.0.1: grant it.
	db, err := sql.Open("mysql", "root@unix("+sock+")/")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''",
		"GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
	} {
		if _, err := db.Exec(q); err != nil {
			cmd.Process.Kill()
			return nil, fmt.Errorf("mariadb setup %q: %w", q, err)
		}
	}
	return &mariaServer{baseDSN: "root@tcp(" + addr + ")/", cmd: cmd}, nil
}

// MySQL is a database for one test.
type MySQL struct {
	// DSN of the test's own database, with parseTime=true and multi
	// statements enabled (go-sql-driver format, as gorm's MySQL driver
	// takes it).
	DSN string
	// Name of the database.
	Name string
	// Addr is the server's host:port.
	Addr string
}

// MariaDB returns a fresh, empty database on a real MariaDB server for the
// test; the database is dropped when the test ends.
func MariaDB(t testing.TB) MySQL {
	t.Helper()
	mu.Lock()
	if maria == nil && mariaErr == nil {
		maria, mariaErr = startMaria()
	}
	srv, err := maria, mariaErr
	dbSeq++
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), dbSeq, sanitize(t.Name()))
	mu.Unlock()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if len(name) > 64 {
		name = name[:64]
	}
	cfg, err := mysql.ParseDSN(srv.baseDSN)
	if err != nil {
		t.Fatalf("testenv: bad DSN: %v", err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			a.Exec("DROP DATABASE IF EXISTS `" + name + "`")
			a.Close()
		}
	})
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.MultiStatements = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Loc = time.UTC
	return MySQL{DSN: cfg.FormatDSN(), Name: name, Addr: cfg.Addr}
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// RedisServer is a private redis-server for one test. Stop and Start let a
// test take Redis away and bring it back on the same address.
type RedisServer struct {
	addr string
	bin  string
	dir  string
	cmd  *exec.Cmd
	ext  bool
}

// Redis starts a private, non-persistent redis-server on 127.0.0.1 for
// the test (or uses TIDE_TEST_REDIS_ADDR) and stops it when the test ends.
func Redis(t testing.TB) *RedisServer {
	t.Helper()
	if addr := os.Getenv("TIDE_TEST_REDIS_ADDR"); addr != "" {
		return &RedisServer{addr: addr, ext: true}
	}
	bin := lookBin("redis-server")
	if bin == "" {
		t.Fatalf("testenv: no Redis server: install it (apt-get install redis-server) or set TIDE_TEST_REDIS_ADDR")
	}
	port, err := freeport.Port()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	r := &RedisServer{addr: fmt.Sprintf("127.0.0.1:%d", port), bin: bin, dir: t.TempDir()}
	if err := r.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { r.Stop() })
	return r
}

// Addr returns host:port.
func (r *RedisServer) Addr() string { return r.addr }

// Start starts the server (again) and waits until it accepts connections.
func (r *RedisServer) Start() error {
	if r.ext {
		return fmt.Errorf("testenv: cannot start an external Redis (TIDE_TEST_REDIS_ADDR)")
	}
	if r.cmd != nil {
		return nil
	}
	_, port, _ := net.SplitHostPort(r.addr)
	cmd := exec.Command(r.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--daemonize", "no", "--dir", r.dir, "--loglevel", "warning")
	cmd.SysProcAttr = deathSig()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	go func() { // drain the log
		s := bufio.NewScanner(stdout)
		for s.Scan() {
		}
	}()
	r.cmd = cmd
	return waitTCP(r.addr, 20*time.Second)
}

// Pause stops the server with SIGSTOP: it keeps its port and its
// connections but answers nothing, as a hung Redis does (a closed port
// fails fast instead). Resume undoes it; call it before the test ends.
func (r *RedisServer) Pause() error {
	if r.cmd == nil {
		return fmt.Errorf("testenv: redis-server not running")
	}
	return r.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused server (SIGCONT).
func (r *RedisServer) Resume() error {
	if r.cmd == nil {
		return fmt.Errorf("testenv: redis-server not running")
	}
	return r.cmd.Process.Signal(syscall.SIGCONT)
}

// Stop kills the server (SIGKILL: Redis is gone, as in an outage) and
// waits for it to exit. Its data is lost (it runs without persistence).
func (r *RedisServer) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}
