package controller_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/testenv/freeport"
)

// aclNotifyFile is the brokers' plain ACL: one admin account (the one the
// controller may sign with) and a tenant without admin rights.
const aclNotifyFile = `
accounts:
  - accessKey: tideInner
    secretKey: tideInnerSecret
    admin: true
  - accessKey: tenant
    secretKey: tenantSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

// TestRoleNotificationsToACLBrokers: a broker with aclEnable takes the
// controller's NOTIFY_BROKER_ROLE_CHANGED when the controller signs it
// with an admin account (BrokerCredentials), and refuses it with
// NO_PERMISSION when it is unsigned or signed by a non-admin account; the
// controller counts each answer in tide_controller_role_notifications_total.
func TestRoleNotificationsToACLBrokers(t *testing.T) {
	cases := []struct {
		name  string
		creds controller.Credentials
		want  string
	}{
		{"signed by an admin account", controller.Credentials{AccessKey: "tideInner", SecretKey: "tideInnerSecret"}, "SUCCESS"},
		{"unsigned", controller.Credentials{}, "NO_PERMISSION"},
		{"signed by a tenant", controller.Credentials{AccessKey: "tenant", SecretKey: "tenantSecret"}, "NO_PERMISSION"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			metricsAddr := freeAddr(t)
			ctl := startController(t, func(o *controller.Options) {
				o.BrokerCredentials, o.MetricsListenAddr = tc.creds, metricsAddr
			})
			ns := nameservertest.Start(t)
			aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
			if err := os.WriteFile(aclPath, []byte(aclNotifyFile), 0o600); err != nil {
				t.Fatal(err)
			}
			brokertest.Start(t, ns, func(o *broker.Options) {
				o.EnableControllerMode, o.ControllerAddr = true, ctl
				o.BrokerName = "acl-notify"
				o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 2500, 200
				o.AclEnable, o.PlainAclFile = true, aclPath
			})
			// The broker's registration elects it master; the controller
			// then notifies it of its role.
			waitUntil(t, 10*time.Second, "a role notification answered "+tc.want, func() bool {
				return notifications(t, metricsAddr, tc.want) >= 1
			})
			if other := map[string]string{"SUCCESS": "NO_PERMISSION", "NO_PERMISSION": "SUCCESS"}[tc.want]; notifications(t, metricsAddr, other) != 0 {
				t.Fatalf("a notification was answered %s, want only %s", other, tc.want)
			}
		})
	}
}

// freeAddr returns a loopback address nothing listens on right now, for
// a server the test starts later or again on the same address: its port
// is outside the kernel's ephemeral range (freeport), so no listen on port
// 0 or outgoing connection takes it meanwhile.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// notifications reads tide_controller_role_notifications_total for one
// response code from the controller's /metrics (0 when absent).
func notifications(t *testing.T, metricsAddr, response string) int {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(fmt.Sprintf(`tide_controller_role_notifications_total\{response="%s"\} (\d+)`, response))
	m := re.FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
