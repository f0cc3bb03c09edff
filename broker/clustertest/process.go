// Package clustertest runs Tide clusters as real processes on loopback:
// NameServers and brokers built from ./cmd/broker and the nameserver's
// ./cmd/nameserver, each with its own directory, configuration file and
// log. The tests (build tag cluster, `make cluster-test`) kill and restart
// those processes to check master/slave replication, read failover and
// multi-master clusters end to end.
//
// This file holds the process plumbing; it has no test logic. Nothing here
// is safe for concurrent use unless stated.
package clustertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidemq/tide/pkg/testenv/freeport"
)

// Binaries are the paths of the built daemons.
type Binaries struct {
	Broker     string
	NameServer string
}

// Build compiles the broker and the NameServer into dir. brokerModule is
// the broker module's directory; the NameServer is expected next to it
// (../nameserver), as in the repository.
func Build(dir, brokerModule string) (Binaries, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	b := Binaries{Broker: filepath.Join(dir, "broker"), NameServer: filepath.Join(dir, "nameserver")}
	for _, t := range []struct{ out, src string }{
		{b.Broker, filepath.Join(brokerModule, "cmd", "broker")},
		{b.NameServer, filepath.Join(brokerModule, "..", "nameserver", "cmd", "nameserver")},
	} {
		cmd := exec.Command(goBin, "build", "-o", t.out, ".")
		cmd.Dir = t.src
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", t.src, err, out)
		}
	}
	return b, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Ports are fixed up front so that a restarted process keeps its address;
// they come from outside the kernel's ephemeral range (freeport), so no
// listen on port 0 or outgoing connection takes one while its process is
// starting or stopped.
func FreePort() (int, error) { return freeport.Port() }

// Process is one daemon: a binary, its arguments and a log file that
// collects its stderr and stdout across restarts.
type Process struct {
	Name    string
	Bin     string
	Args    []string
	LogPath string
	// Gid, if not 0, is the group id the process runs with (root only):
	// iptables' owner match (--gid-owner) then tells its packets apart
	// on loopback, to cut it off from chosen peers.
	Gid uint32

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
}

// Start runs the process. It returns once the process was spawned, not
// when it serves (callers wait for that themselves).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.Name)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "----- %s start %s %s\n", time.Now().Format(time.RFC3339Nano), p.Bin, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so a signal to the test runner does not hit the
	// daemons twice and a stray daemon never outlives Kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.Gid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(os.Getuid()), Gid: p.Gid, NoSetGroups: true}
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid returns the running process's id, 0 when it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL (no shutdown code runs: a crash) and waits for the
// exit. Killing a process that is not running is a no-op.
func (p *Process) Kill() error {
	return p.signal(syscall.SIGKILL, 10*time.Second)
}

// Pause sends SIGSTOP: the process stops answering anything (a hung or
// partitioned daemon) until Resume.
func (p *Process) Pause() error { return p.send(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused process.
func (p *Process) Resume() error { return p.send(syscall.SIGCONT) }

func (p *Process) send(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s: not running", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Stop sends SIGTERM (graceful shutdown) and waits up to timeout, then
// kills. It returns an error if the process had to be killed or exited
// with a failure status.
func (p *Process) Stop(timeout time.Duration) error {
	return p.signal(syscall.SIGTERM, timeout)
}

func (p *Process) signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	defer func() {
		p.mu.Lock()
		p.cmd, p.done = nil, nil
		p.mu.Unlock()
	}()
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s: did not exit within %v after %v; killed", p.Name, timeout, sig)
	}
	p.mu.Lock()
	err := p.exitErr
	p.mu.Unlock()
	if sig == syscall.SIGKILL {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s: %v", p.Name, err)
	}
	return err
}

// Log returns the last max bytes of the process's log.
func (p *Process) Log(max int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(data) > max {
		data = data[len(data)-max:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
		data = append([]byte("[...]\n"), data...)
	}
	return string(data)
}

// LogLines returns the log lines containing substr.
func (p *Process) LogLines(substr string) []string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// WaitTCP polls addr until a TCP connection succeeds, the process exits,
// or timeout passes.
func (p *Process) WaitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("%s exited before listening on %s", p.Name, addr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not reachable after %v: %w", p.Name, addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RenderConf writes a broker.conf to dst: the template's lines with the
// values of the keys in set replaced (comments and order kept), followed by
// the keys of set the template does not have. Continuation lines and
// escapes are not supported in templates (the deploy examples use none).
func RenderConf(template, dst string, set map[string]string) error {
	data, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && t[0] != '#' && t[0] != '!' {
			if k, _, ok := strings.Cut(t, "="); ok {
				k = strings.TrimSpace(k)
				if v, ok := set[k]; ok {
					line = k + "=" + v
					seen[k] = true
				}
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		out.WriteString("\n# set by the cluster test\n")
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&out, "%s=%s\n", k, set[k])
		}
	}
	return os.WriteFile(dst, out.Bytes(), 0o644)
}
