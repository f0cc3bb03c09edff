package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func writeConf(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunBadConfig(t *testing.T) {
	cases := []struct {
		name, conf, want string
	}{
		{"bad number", "listenPort=abc\n", "listenPort"},
		{"bad role", "brokerRole=BOSS\n", "brokerRole"},
		{"bad flush", "flushDiskType=SOMETIMES\n", "flushDiskType"},
		{"slave id", "brokerRole=SLAVE\nbrokerId=0\n", "brokerId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conf := writeConf(t, c.conf+"storePathRootDir="+t.TempDir()+"\n")
			err := run(context.Background(), []string{"-c", conf}, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want mention of %s", err, c.want)
			}
		})
	}
	if err := run(context.Background(), []string{"-c", "/nonexistent/broker.conf"}, io.Discard, nil); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestRunStartsAndStops(t *testing.T) {
	conf := writeConf(t, "brokerName=broker-a\nlistenAddr=127.0.0.1\nlistenPort=0\nbrokerIP1=127.0.0.1\nmappedFileSizeCommitLog=67108864\nsomeJavaOnlyKey=1\nstorePathRootDir="+t.TempDir()+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	errc := make(chan error, 1)
	var log strings.Builder
	go func() { errc <- run(ctx, []string{"-c", conf}, &log, func(a string) { started <- a }) }()
	select {
	case addr := <-started:
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("addr %s", addr)
		}
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("broker did not start")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "someJavaOnlyKey") {
		t.Fatalf("unknown key not warned about:\n%s", log.String())
	}
}

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if got := tuneGC(func(string) string { return "" }); got != defaultGCPercent {
		t.Fatalf("no GOGC: %d, want %d", got, defaultGCPercent)
	}
	if p := debug.SetGCPercent(defaultGCPercent); p != defaultGCPercent {
		t.Fatalf("runtime GC percent %d, want %d", p, defaultGCPercent)
	}
	// With GOGC set, the runtime's value (here 150) is left as it is.
	debug.SetGCPercent(150)
	if got := tuneGC(func(string) string { return "150" }); got != 150 {
		t.Fatalf("GOGC=150: %d", got)
	}
	if p := debug.SetGCPercent(150); p != 150 {
		t.Fatalf("runtime GC percent %d, want 150", p)
	}
}
