package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func writeConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "controller.properties")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const peers3 = "controllerDLegerPeers=n0-127.0.0.1:26101;n1-127.0.0.1:26102;n2-127.0.0.1:26103\n" +
	"controllerRPCPeers=n0-127.0.0.1:26001;n1-127.0.0.1:26002;n2-127.0.0.1:26003\n"

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no config", nil, "-c config file is required"},
		{"unknown key", []string{"-c", writeConf(t, "listenPort=0\nbrokerIP1=x\n")}, `:2: unknown key "brokerIP1"`},
		{"no peers", []string{"-c", writeConf(t, "controllerDLegerSelfId=n0\n")}, "controllerDLegerPeers is required"},
		{"bad peer", []string{"-c", writeConf(t, "controllerDLegerPeers=n0:1\ncontrollerRPCPeers=n0-a:1\n")}, "want id-host:port"},
		{"peer lists differ", []string{"-c", writeConf(t, peers3+"controllerRPCPeers=n0-127.0.0.1:1\n")}, "must name the same nodes"},
		{"self not a peer", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n9\ncontrollerStorePath="+dir+"\n")}, `node id "n9" is not among the peers`},
		{"bad scan", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\nscanNotActiveBrokerInterval=0\n")}, "bad scanNotActiveBrokerInterval"},
		{"bad unclean", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\nenableElectUncleanMaster=maybe\n")}, "bad enableElectUncleanMaster"},
		{"bad port", []string{"-c", writeConf(t, peers3+"listenPort=99999\n")}, "bad listenPort"},
		{"bad tlsMode", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\ntlsMode=strict\n")}, "bad tlsMode"},
		{"enforcing without a certificate", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\ntls.server.mode=enforcing\n")}, "need tlsCertPath and tlsKeyPath"},
		{"tlsClientAuth without a CA", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\ntlsClientAuth=true\n")}, "tlsClientAuth needs tlsCAPath"},
		{"bad tlsEnable", []string{"-c", writeConf(t, peers3+"controllerDLegerSelfId=n0\ntlsEnable=yes please\n")}, "bad tlsEnable"},
		{"stray argument", []string{"x"}, `unexpected argument "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stderr, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestRunSingleNode starts a one-node group from a config file, sees it
// lead and serve a broker, and stops it through the context.
func TestRunSingleNode(t *testing.T) {
	dir := t.TempDir()
	conf := writeConf(t, "listenPort=0\nbindAddress=127.0.0.1\ncontrollerDLegerGroup=g1\n"+
		"controllerDLegerPeers=n0-127.0.0.1:0\ncontrollerRPCPeers=n0-127.0.0.1:0\ncontrollerDLegerSelfId=n0\n"+
		"controllerStorePath="+dir+"\nbrokerHeartbeatTimeoutMills=3000\n")
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan string, 1)
	var wg sync.WaitGroup
	var runErr error
	var stderr safeBuffer
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = run(ctx, []string{"-c", conf}, &stderr, func(a string) { addrCh <- a })
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(10 * time.Second):
		t.Fatalf("not started: %s", stderr.String())
	}
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{addr})
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if err := cli.ApplyBrokerID(cctx, "c", "b", 1, "127.0.0.1:1;1"); err != nil {
		t.Fatal(err)
	}
	h, _, err := cli.ElectMaster(cctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1})
	if err != nil || h.MasterBrokerID != 1 {
		t.Fatalf("elect: %+v %v", h, err)
	}
	md, err := cli.Metadata(cctx, addr)
	if err != nil || md.Group != "g1" || !md.IsLeader {
		t.Fatalf("metadata: %+v %v", md, err)
	}
	if err := run(cctx, []string{"-healthcheck", addr}, &bytes.Buffer{}, nil); err != nil {
		t.Fatalf("healthcheck: %v", err)
	}
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, stderr.String())
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
