//go:build cluster

package failovertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

// staleACL is the file both brokers start with: the admin, the account
// the brokers sign their own requests with, and a tenantA that may touch
// every topic (what an operator later narrowed on the master only).
const staleACL = `
accounts:
  - accessKey: tideAdmin
    secretKey: tideAdminSecret
    admin: true
  - accessKey: tideInner
    secretKey: tideInnerSecret
    admin: true
  - accessKey: tenantA
    secretKey: tenantASecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`

var (
	adminCreds = mqclient.Credentials{AccessKey: "tideAdmin", SecretKey: "tideAdminSecret"}
	tenantA    = mqclient.Credentials{AccessKey: "tenantA", SecretKey: "tenantASecret"}
	tenantB    = mqclient.Credentials{AccessKey: "tenantB", SecretKey: "tenantBSecret"}
)

// TestACLFollowsTheMaster: ACL in controller mode. Both brokers start
// with the same file, in which tenantA may touch every topic. An operator
// narrows tenantA to its own topic and creates tenantB, through the admin
// requests (mqclient.Admin) on the master only. The slave enforces the
// change after a metadata sync; the master is SIGKILLed, and the promoted
// slave refuses tenantA's sends to tenantB's topic while it accepts
// tenantA's to its own and tenantB's to its own (pkg/mqclient producers
// and the official client v2.1.2 with credentials, through the
// NameServer's routes). Without the ACL sync
// the promoted slave still lets tenantA into every topic and does not
// know tenantB.
func TestACLFollowsTheMaster(t *testing.T) {
	g := newGroup(t, 3)
	g.brokerConf = map[string]string{"aclEnable": "true",
		"innerClientAuthenticationCredentials": `{"accessKey":"tideInner","secretKey":"tideInnerSecret"}`}
	for _, name := range []string{"b1", "b2"} {
		path := filepath.Join(g.dir, name, "store", "config", "plain_acl.yml")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(staleACL), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b1 := g.startBroker("b1")
	g.eventually(30*time.Second, "b1 master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == b1.addr
	})
	b2 := g.startBroker("b2")
	adm := aclAdmin(t, g.ns, adminCreds)
	ctx := context.Background()
	const topicA, topicB = "TenantATopic", "TenantBTopic"
	for _, tp := range []string{topicA, topicB} {
		if err := adm.CreateTopicOn(ctx, b1.addr, tp, mqclient.TopicConfig{ReadQueues: 2, WriteQueues: 2}); err != nil {
			t.Fatalf("create %s: %v", tp, err)
		}
	}
	g.waitInSync("b2 in the SyncStateSet")

	// the operator's change, on the master only
	if err := adm.UpdateACLAccount(ctx, b1.addr, protocol.PlainAccessConfig{AccessKey: "tenantA",
		DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB", TopicPerms: []string{topicA + "=PUB|SUB"}}); err != nil {
		t.Fatalf("narrow tenantA: %v", err)
	}
	if err := adm.UpdateACLAccount(ctx, b1.addr, protocol.PlainAccessConfig{AccessKey: "tenantB", SecretKey: tenantB.SecretKey,
		DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB", TopicPerms: []string{topicB + "=PUB|SUB"}}); err != nil {
		t.Fatalf("create tenantB: %v", err)
	}
	statsA, statsB := aclAdmin(t, g.ns, tenantA), aclAdmin(t, g.ns, tenantB)
	for _, addr := range []string{b1.addr, b2.addr} {
		where := "master"
		if addr == b2.addr {
			where = "slave"
		}
		// GET_TOPIC_STATS_INFO needs PUB or SUB on the topic, and a slave
		// answers it: the slave's decision, not the master's
		g.eventually(20*time.Second, "the narrowed tenantA and the new tenantB enforced on the "+where, func() bool {
			_, errOwn := statsA.TopicStats(ctx, addr, topicA)
			_, errOther := statsA.TopicStats(ctx, addr, topicB)
			_, errB := statsB.TopicStats(ctx, addr, topicB)
			return errOwn == nil && noPermission(errOther) && errB == nil
		})
	}

	start := time.Now()
	if err := b1.Kill(); err != nil {
		t.Fatal(err)
	}
	g.eventually(30*time.Second, "b2 named master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == b2.addr
	})
	pa, pb := aclProducer(t, g.ns, "pg-tenant-a", tenantA), aclProducer(t, g.ns, "pg-tenant-b", tenantB)
	var accepted time.Duration
	g.eventually(60*time.Second, "tenantA's send to its own topic on the new master", func() bool {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := pa.Send(sctx, &mqclient.Message{Topic: topicA, Body: []byte("own")})
		if err != nil || res.Status != mqclient.SendOK {
			return false
		}
		if res.Queue.BrokerName != groupName {
			t.Fatalf("sent to broker %s", res.Queue.BrokerName)
		}
		accepted = time.Since(start)
		return true
	})
	t.Logf("tenantA's first send accepted by the new master %v after the kill", accepted.Round(time.Millisecond))
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := pa.Send(sctx, &mqclient.Message{Topic: topicB, Body: []byte("intrusion")}); !noPermission(err) {
		t.Fatalf("tenantA's send to tenantB's topic on the new master: %v, want NO_PERMISSION", err)
	}
	if res, err := pb.Send(sctx, &mqclient.Message{Topic: topicB, Body: []byte("own")}); err != nil || res.Status != mqclient.SendOK {
		t.Fatalf("tenantB's send to its own topic on the new master: %v %+v", err, res)
	}
	if _, err := statsA.TopicStats(ctx, b2.addr, topicB); !noPermission(err) {
		t.Fatalf("tenantA's stats of tenantB's topic on the new master: %v, want NO_PERMISSION", err)
	}
	// the official client v2.1.2 with tenantA's credentials: the same
	official := officialProducer(t, g.ns, producer.WithCredentials(primitive.Credentials{AccessKey: tenantA.AccessKey, SecretKey: tenantA.SecretKey}))
	if res, err := official.SendSync(sctx, primitive.NewMessage(topicA, []byte("own, official"))); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("official client, tenantA's own topic on the new master: %v %+v", err, res)
	}
	if _, err := official.SendSync(sctx, primitive.NewMessage(topicB, []byte("intrusion, official"))); err == nil || !strings.Contains(err.Error(), "No permission") {
		t.Fatalf("official client, tenantA to tenantB's topic on the new master: %v, want a refusal naming the permission", err)
	}
}

func noPermission(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.NoPermission
}

func aclAdmin(t *testing.T, ns string, c mqclient.Credentials) *mqclient.Admin {
	return tidetest.Admin(t, mqclient.WithNameServers(ns), mqclient.WithCredentials(c))
}

func aclProducer(t *testing.T, ns, group string, c mqclient.Credentials) *mqclient.Producer {
	return mqProducer(t, ns, mqclient.WithProducerGroup(group), mqclient.WithCredentials(c))
}
