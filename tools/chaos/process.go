package chaos

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one daemon of the cluster: a command line (run inside its
// host's namespace) and a log file that collects its output across
// restarts. Methods are safe for concurrent use.
type Process struct {
	Name    string
	Host    string
	Addr    string // host:port it serves on, for readiness
	Argv    []string
	LogPath string
	Env     []string // added to the tool's environment

	mu      sync.Mutex
	onCrash func(p *Process, state string)
	cmd     *exec.Cmd
	done    chan struct{}
	paused  bool
	starts  int
}

// Start runs the process; it returns once it was spawned.
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
	fmt.Fprintf(logf, "----- chaos: start %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.Argv, " "))
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// own process group: a ^C to the tool does not reach the daemons, the
	// tool stops them itself; if the tool dies (a test timeout), the
	// kernel kills them (ip netns exec execs the daemon, which keeps the
	// parent-death signal)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.paused = cmd, done, false
	p.starts++
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		crashed := p.cmd == cmd // Kill forgets cmd before it signals
		if crashed {
			p.cmd, p.done, p.paused = nil, nil, false
		}
		onCrash := p.onCrash
		p.mu.Unlock()
		state := "exited"
		if err != nil {
			state = err.Error()
		}
		if crashed {
			fmt.Fprintf(logf, "----- chaos: %s crashed %s: %s\n", p.Name, time.Now().Format(time.RFC3339Nano), state)
		}
		logf.Close()
		close(done)
		if crashed && onCrash != nil {
			onCrash(p, state)
		}
	}()
	return nil
}

// SetOnCrash sets fn to be called (from a goroutine of its own) when the
// process exits without being killed by Kill: a crash.
func (p *Process) SetOnCrash(fn func(p *Process, state string)) {
	p.mu.Lock()
	p.onCrash = fn
	p.mu.Unlock()
}

// Pid returns the running process's id, 0 if it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process is up (paused counts as up).
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

// Kill sends SIGKILL and waits for the exit; a no-op if not running.
func (p *Process) Kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done, p.paused = nil, nil, false
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(15 * time.Second):
		return fmt.Errorf("%s: still running 15 s after SIGKILL", p.Name)
	}
}

// Pause sends SIGSTOP.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP, true) }

// Resume sends SIGCONT.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT, false) }

func (p *Process) signal(sig syscall.Signal, paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s: not running", p.Name)
	}
	p.paused = paused
	return p.cmd.Process.Signal(sig)
}

// Paused reports whether the process was paused and not resumed.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Starts counts the process's starts.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// WaitTCP polls Addr until a TCP connection succeeds, the process exits or
// timeout passes.
func (p *Process) WaitTCP(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("%s exited before listening on %s (log %s)", p.Name, p.Addr, p.LogPath)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not reachable after %v: %w", p.Name, p.Addr, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
