package main

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/controller/controllertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// startController runs a one-node controller group on loopback with a
// broker group "b" of two registered, heartbeating replicas, 1 master and
// both in sync.
func startController(t *testing.T, opts ...func(*controller.Options)) string {
	t.Helper()
	var clientTLS *tls.Config
	all := append([]func(*controller.Options){func(o *controller.Options) {
		o.HeartbeatTimeout = time.Minute // one heartbeat keeps the replicas alive for the whole test
	}}, opts...)
	addr := controllertest.Start(t, append(all, func(o *controller.Options) { clientTLS = o.ClientTLSConfig })...)
	rc := remoting.NewClient(remoting.ClientOptions{TLSConfig: clientTLS})
	defer rc.Close()
	cli := controllerclient.New(rc, []string{addr})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range []int64{1, 2} {
		addr := "127.0.0.1:1091" + string(rune('0'+id))
		if err := cli.ApplyBrokerID(ctx, "c", "b", id, addr+";1"); err != nil {
			t.Fatal(err)
		}
		if err := cli.Heartbeat(ctx, &protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: addr, BrokerName: "b", BrokerID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestControllerCommands(t *testing.T) {
	addr := startController(t)
	var h *harness // no NameServer needed
	if out := h.ok(t, "getControllerMetaData", "-a", addr); !strings.Contains(out, "#IsLeader") || !strings.Contains(out, "true") {
		t.Fatalf("getControllerMetaData:\n%s", out)
	}
	var set map[string]protocol.ReplicasInfo
	h.okJSON(t, &set, "getSyncStateSet", "-a", addr, "-b", "b")
	if ri := set["b"]; ri.MasterBrokerID != 1 || ri.MasterEpoch != 1 || len(ri.InSyncReplicas) != 2 || !ri.InSyncReplicas[1].Alive {
		t.Fatalf("getSyncStateSet: %+v", set)
	}
	if out := h.ok(t, "getSyncStateSet", "-a", addr, "-b", "b,nope"); !strings.Contains(out, "127.0.0.1:10912") || !strings.Contains(out, "nope") {
		t.Fatalf("getSyncStateSet table:\n%s", out)
	}
	var eh protocol.ElectMasterResponseHeader
	h.okJSON(t, &eh, "electMaster", "-a", addr, "-b", "b", "-i", "2")
	if eh.MasterBrokerID != 2 || eh.MasterEpoch != 2 || eh.MasterAddress != "127.0.0.1:10912" {
		t.Fatalf("electMaster: %+v", eh)
	}
	h.fails(t, 1, "CONTROLLER_ELECT_MASTER_FAILED", "electMaster", "-a", addr, "-b", "b", "-i", "9")
	// the history has both elections, the designated one last
	var hist []protocol.Election
	h.okJSON(t, &hist, "listElections", "-a", addr, "-b", "b")
	if len(hist) != 2 || hist[0].NewMaster != 1 || hist[0].Reason != "broker" || hist[1].OldMaster != 1 || hist[1].NewMaster != 2 ||
		hist[1].Epoch != 2 || hist[1].Reason != "admin" || hist[1].NewMasterAddr != "127.0.0.1:10912" || hist[1].Time.IsZero() {
		t.Fatalf("listElections: %+v", hist)
	}
	if out := h.ok(t, "listElections", "-a", addr); !strings.Contains(out, "#NewMaster") || !strings.Contains(out, "2(127.0.0.1:10912)") ||
		!strings.Contains(out, "admin") {
		t.Fatalf("listElections table:\n%s", out)
	}
	if out := h.ok(t, "listElections", "-a", addr, "-b", "none"); strings.Contains(out, "127.0.0.1") {
		t.Fatalf("listElections of an unknown group:\n%s", out)
	}
	h.fails(t, 2, "-i brokerId is required", "electMaster", "-a", addr, "-b", "b")
	h.fails(t, 2, "-a controllerAddr is required", "getSyncStateSet", "-b", "b")
}

// TestControllerCommandsOverTLS: against a controller that enforces
// mutual TLS, the controller commands connect with the --tls* flags and
// fail with a plain connection.
func TestControllerCommandsOverTLS(t *testing.T) {
	certs := tlstest.New(t)
	addr := startController(t, func(o *controller.Options) {
		o.TLSMode, o.TLSConfig, o.ClientTLSConfig = remoting.TLSEnforcing, certs.ServerConfig(true), certs.ClientConfig()
	})
	var h *harness
	tlsArgs := []string{"--tls-ca", certs.Files.CA, "--tls-cert", certs.Files.ClientCert, "--tls-key", certs.Files.ClientKey}
	var set map[string]protocol.ReplicasInfo
	h.okJSON(t, &set, append([]string{"getSyncStateSet", "-a", addr, "-b", "b"}, tlsArgs...)...)
	if ri := set["b"]; ri.MasterBrokerID != 1 {
		t.Fatalf("getSyncStateSet over TLS: %+v", set)
	}
	if out := h.ok(t, "getControllerMetaData", "-a", addr, "--timeout", "2s"); strings.Contains(out, "true") {
		t.Fatalf("a plain connection to an enforcing controller was served:\n%s", out)
	}
}
