package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func writeConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "namesrv.properties")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, busyPort, _ := net.SplitHostPort(busy.Addr().String())
	kv := filepath.Join(t.TempDir(), "kv.json")

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key", []string{"-c", writeConf(t, "listenPort=0\n\nbrokerIP1=1.2.3.4\n")}, `:3: unknown key "brokerIP1"`},
		{"bad port in file", []string{"-c", writeConf(t, "listenPort=70000\n")}, `bad listen port "70000"`},
		{"bad port flag", []string{"-p", "x"}, `bad listen port "x"`},
		{"port in use", []string{"-b", "127.0.0.1", "-p", busyPort, "-c", writeConf(t, "kvConfigPath="+kv)}, "address already in use"},
		{"missing file", []string{"-c", filepath.Join(t.TempDir(), "nope.properties")}, "no such file"},
		{"bad escape", []string{"-c", writeConf(t, `kvConfigPath=\u12`)}, "malformed"},
		{"bad scan interval", []string{"-c", writeConf(t, "scanNotActiveBrokerInterval=0\n")}, "bad scanNotActiveBrokerInterval"},
		{"bad expiry", []string{"-c", writeConf(t, "brokerChannelExpiredTime=soon\n")}, "bad brokerChannelExpiredTime"},
		{"bad bind address", []string{"-b", "not an address", "-p", "0"}, "bad host"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"-x"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stderr, func(string) { t.Error("started") })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stderr, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(stderr.String(), "-c file") {
		t.Fatalf("usage %q", stderr.String())
	}
}

func TestRunServesAndStops(t *testing.T) {
	kv := filepath.Join(t.TempDir(), "kv", "kvConfig.json")
	conf := writeConf(t, "# Tide NameServer\nlistenPort = 9876\nbindAddress=127.0.0.1\nkvConfigPath="+kv+"\nscanNotActiveBrokerInterval=5000\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		// -p overrides the file's listenPort.
		done <- run(ctx, []string{"-c", conf, "-p", "0"}, io.Discard, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not started")
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":9876") {
		t.Fatalf("listen address %s", addr)
	}

	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	put := &protocol.PutKVConfigRequestHeader{Namespace: "n", Key: "k", Value: "v"}
	ictx, icancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := cl.Invoke(ictx, addr, protocol.NewRequest(protocol.PutKVConfig, put.Encode(), nil))
	icancel()
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("put kv: %v %v", resp, err)
	}
	if _, err := os.Stat(kv); err != nil {
		t.Fatalf("kv file from the config not written: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
}

// TestBinarySignals builds the command and checks the process contract:
// it logs its address, stops cleanly on SIGTERM, and exits non-zero with a
// one-line message on a bad configuration.
func TestBinarySignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "nameserver")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	conf := writeConf(t, "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath="+filepath.Join(t.TempDir(), "kv.json")+"\n")
	cmd := exec.Command(bin, "-c", conf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	re := regexp.MustCompile(`msg="nameserver started" addr=(\S+)`)
	sc := bufio.NewScanner(stderr)
	var addr string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatal("no listen address logged")
	}
	go io.Copy(io.Discard, stderr)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	out, err := exec.Command(bin, "-c", writeConf(t, "nope=1\n")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("bad config: err %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `unknown key "nope"`) {
		t.Fatalf("bad config output %q", out)
	}
}
