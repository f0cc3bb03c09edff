package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The ACL files of the sync tests. Both brokers know the admin and the
// account they sign their own requests with (inner); only the master
// knows tenantA, only the slave knows slaveOnly.
const (
	masterACL = `
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: innerKey
    secretKey: innerSecret
    admin: true
  - accessKey: tenantA
    secretKey: tenantASecret
    topicPerms:
      - TopicA=PUB|SUB
`
	slaveACL = `
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: innerKey
    secretKey: innerSecret
    admin: true
  - accessKey: slaveOnly
    secretKey: slaveOnlySecret
    defaultTopicPerm: PUB|SUB
`
	innerCreds = `{"accessKey":"innerKey","secretKey":"innerSecret"}`
)

// aclBroker turns ACL on with the file text (written to a fresh path) and
// signs the broker's own requests as innerKey.
func aclBroker(t *testing.T, text string) (func(*broker.Options), string) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, text)
	return func(o *broker.Options) {
		o.AclEnable, o.PlainAclFile = true, path
		o.InnerClientAuthenticationCredentials = innerCreds
	}, path
}

// maxOffsetAs asks addr for a queue's max offset signed as ak: any
// permission on the topic is enough (aclrules.go), so the code says
// whether ak may touch topic there.
func maxOffsetAs(t *testing.T, addr, ak, sk, topic string) int16 {
	t.Helper()
	h := protocol.GetMaxOffsetRequestHeader{Topic: topic, QueueID: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := signedClient(t, ak, sk).Invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
	if err != nil {
		t.Fatalf("GET_MAX_OFFSET %s as %s on %s: %v", topic, ak, addr, err)
	}
	return resp.Code
}

// adminCall sends an ACL admin request to addr signed as the admin.
func adminCall(t *testing.T, addr string, code int16, h protocol.Header) *protocol.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ext map[string]string
	if h != nil {
		ext = h.Encode()
	}
	resp, err := signedClient(t, "adminKey", "adminSecret").Invoke(ctx, addr, protocol.NewRequest(code, ext, nil))
	if err != nil {
		t.Fatalf("code %d on %s: %v", code, addr, err)
	}
	return resp
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestACLFollowsMaster: a slave with ACL on replaces its own plain_acl.yml
// by the master's document in the metadata sync and enforces it (an
// account only the master had works on the slave, one only the slave had
// is gone); accounts created, changed and deleted on the master through
// the admin requests reach the slave; an unchanged document is not
// written again; and the admin requests are refused where ACL is off.
func TestACLFollowsMaster(t *testing.T) {
	t.Parallel()
	ns := nameservertest.Start(t)
	withMasterACL, _ := aclBroker(t, masterACL)
	withSlaveACL, slavePath := aclBroker(t, slaveACL)
	m := brokertest.Start(t, ns, withMasterACL)
	s := brokertest.Start(t, ns, slave, withSlaveACL)

	// before the first sync the slave enforces its own file; the sync runs
	// at start and every 10 s (4.x mode): ask for it now
	s.SyncMetadataNow()
	waitFor(t, "tenantA (the master's account) accepted by the slave", 20*time.Second, func() bool {
		s.SyncMetadataNow()
		return maxOffsetAs(t, s.Addr(), "tenantA", "tenantASecret", "TopicA") == protocol.Success
	})
	if c := maxOffsetAs(t, s.Addr(), "tenantA", "tenantASecret", "TopicB"); c != protocol.NoPermission {
		t.Fatalf("tenantA on TopicB at the slave: code %d, want NO_PERMISSION", c)
	}
	if c := maxOffsetAs(t, s.Addr(), "slaveOnly", "slaveOnlySecret", "TopicA"); c != protocol.NoPermission {
		t.Fatalf("slaveOnly (not in the master's ACL) at the slave: code %d, want NO_PERMISSION", c)
	}
	if data, err := os.ReadFile(slavePath); err != nil || !strings.Contains(string(data), "tenantA") || strings.Contains(string(data), "slaveOnly") {
		t.Fatalf("slave's file after the sync (%v):\n%s", err, data)
	}
	if fi, err := os.Stat(slavePath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("slave's file mode: %v %v, want 0600", fi.Mode(), err)
	}

	// an unchanged document is not written again
	ino := inode(t, slavePath)
	for i := 0; i < 3; i++ {
		s.SyncMetadataNow()
		time.Sleep(300 * time.Millisecond)
	}
	if inode(t, slavePath) != ino {
		t.Fatal("the slave rewrote its ACL file for an unchanged master document")
	}

	// admin requests on the master: create tenantB, narrow tenantA, and
	// both reach the slave
	resp := adminCall(t, m.Addr(), protocol.UpdateAndCreateACLConfig, &protocol.CreateAccessConfigRequestHeader{
		AccessKey: "tenantB", SecretKey: "tenantBSecret", DefaultTopicPerm: "DENY", TopicPerms: "TopicB=PUB|SUB"})
	if resp.Code != protocol.Success {
		t.Fatalf("create tenantB: %d %s", resp.Code, resp.Remark)
	}
	resp = adminCall(t, m.Addr(), protocol.UpdateAndCreateACLConfig, &protocol.CreateAccessConfigRequestHeader{
		AccessKey: "tenantA", TopicPerms: "TopicA=DENY"})
	if resp.Code != protocol.Success {
		t.Fatalf("update tenantA: %d %s", resp.Code, resp.Remark)
	}
	if c := maxOffsetAs(t, m.Addr(), "tenantB", "tenantBSecret", "TopicB"); c != protocol.Success {
		t.Fatalf("tenantB on the master: code %d", c)
	}
	waitFor(t, "tenantB and tenantA's new permission on the slave", 20*time.Second, func() bool {
		s.SyncMetadataNow()
		return maxOffsetAs(t, s.Addr(), "tenantB", "tenantBSecret", "TopicB") == protocol.Success &&
			maxOffsetAs(t, s.Addr(), "tenantA", "tenantASecret", "TopicA") == protocol.NoPermission
	})
	// tenantA kept its secret (an empty field keeps the value)
	if c := maxOffsetAs(t, s.Addr(), "tenantB", "tenantBSecret", "TopicA"); c != protocol.NoPermission {
		t.Fatalf("tenantB on TopicA at the slave: code %d, want NO_PERMISSION", c)
	}

	// delete tenantB and replace the global whitelist on the master
	if resp := adminCall(t, m.Addr(), protocol.DeleteACLConfig, &protocol.DeleteAccessConfigRequestHeader{AccessKey: "tenantB"}); resp.Code != protocol.Success {
		t.Fatalf("delete tenantB: %d %s", resp.Code, resp.Remark)
	}
	if resp := adminCall(t, m.Addr(), protocol.DeleteACLConfig, &protocol.DeleteAccessConfigRequestHeader{AccessKey: "nobody"}); resp.Code != protocol.DeleteACLFailed {
		t.Fatalf("delete a missing account: %d %s, want DELETE_ACL_CONFIG_FAILED", resp.Code, resp.Remark)
	}
	if resp := adminCall(t, m.Addr(), protocol.UpdateGlobalWhiteAddrsConfig, &protocol.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: "10.9.8.*"}); resp.Code != protocol.Success {
		t.Fatalf("global white: %d %s", resp.Code, resp.Remark)
	}
	waitFor(t, "tenantB gone and the whitelist on the slave", 20*time.Second, func() bool {
		s.SyncMetadataNow()
		data, _ := os.ReadFile(slavePath)
		return maxOffsetAs(t, s.Addr(), "tenantB", "tenantBSecret", "TopicB") == protocol.NoPermission && strings.Contains(string(data), "10.9.8.*")
	})
	// an invalid account is refused and changes nothing
	if resp := adminCall(t, m.Addr(), protocol.UpdateAndCreateACLConfig, &protocol.CreateAccessConfigRequestHeader{AccessKey: "short", SecretKey: "x"}); resp.Code != protocol.UpdateAndCreateACLFailed {
		t.Fatalf("invalid account: %d %s, want UPDATE_AND_CREATE_ACL_CONFIG_FAILED", resp.Code, resp.Remark)
	}
	// a non-admin may not change the ACL
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := protocol.CreateAccessConfigRequestHeader{AccessKey: "tenantA", Admin: true}
	resp, err := signedClient(t, "tenantA", "tenantASecret").Invoke(ctx, m.Addr(), protocol.NewRequest(protocol.UpdateAndCreateACLConfig, h.Encode(), nil))
	if err != nil || resp.Code != protocol.NoPermission {
		t.Fatalf("tenantA making itself admin: %v %+v, want NO_PERMISSION", err, resp)
	}
}

// TestACLSyncNeedsACLOnBothSides: a master with ACL off sends no ACL, and
// its slave keeps its own file; a slave with ACL off writes no file;
// a broker with ACL off refuses the ACL admin requests.
func TestACLSyncNeedsACLOnBothSides(t *testing.T) {
	t.Parallel()
	t.Run("master off", func(t *testing.T) {
		ns := nameservertest.Start(t)
		m := brokertest.Start(t, ns)
		withSlaveACL, slavePath := aclBroker(t, slaveACL)
		s := brokertest.Start(t, ns, slave, withSlaveACL)
		before, _ := os.ReadFile(slavePath)
		topic := uniq("AclOffTopic")
		if err := createTopic(m.Addr(), topic, 1); err != nil {
			t.Fatal(err)
		}
		// the topic on the slave: a sync ran (and saw no ACL)
		waitFor(t, "the topic on the slave", 20*time.Second, func() bool {
			s.SyncMetadataNow()
			resp := adminCall(t, s.Addr(), protocol.GetAllTopicConfig, nil)
			return resp.Code == protocol.Success && strings.Contains(string(resp.Body), topic)
		})
		if after, _ := os.ReadFile(slavePath); string(after) != string(before) {
			t.Fatalf("the slave's file changed:\n%s", after)
		}
		if c := maxOffsetAs(t, s.Addr(), "slaveOnly", "slaveOnlySecret", topic); c != protocol.Success {
			t.Fatalf("slaveOnly on the slave: code %d", c)
		}
		resp := adminCall(t, m.Addr(), protocol.UpdateAndCreateACLConfig, &protocol.CreateAccessConfigRequestHeader{AccessKey: "tenantC", SecretKey: "tenantCSecret"})
		if resp.Code != protocol.UpdateAndCreateACLFailed || !strings.Contains(resp.Remark, "aclEnable is false") {
			t.Fatalf("ACL admin request on a broker with ACL off: %d %s", resp.Code, resp.Remark)
		}
	})
	t.Run("slave off", func(t *testing.T) {
		ns := nameservertest.Start(t)
		withMasterACL, _ := aclBroker(t, masterACL)
		m := brokertest.Start(t, ns, withMasterACL)
		dir := t.TempDir()
		s := brokertest.Start(t, ns, slave, func(o *broker.Options) {
			o.Store.StorePathRootDir = dir
			o.InnerClientAuthenticationCredentials = innerCreds
		})
		topic := uniq("AclOffTopic")
		resp := adminCall(t, m.Addr(), protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102",
			ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"})
		if resp.Code != protocol.Success {
			t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
		}
		waitFor(t, "the topic on the slave", 20*time.Second, func() bool {
			s.SyncMetadataNow()
			resp := adminCall(t, s.Addr(), protocol.GetAllTopicConfig, nil)
			return resp.Code == protocol.Success && strings.Contains(string(resp.Body), topic)
		})
		opts := broker.DefaultOptions()
		opts.Store.StorePathRootDir = dir
		if _, err := os.Stat(opts.AclFile()); !os.IsNotExist(err) {
			t.Fatalf("a slave with ACL off wrote %s: %v", opts.AclFile(), err)
		}
	})
}
