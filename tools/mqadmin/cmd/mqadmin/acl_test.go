package main

import (
	"os"
	"strings"
	"testing"
)

// TestACLCommands: updateAclConfig creates an account that then works,
// narrows it, deleteAclConfig removes it, updateGlobalWhiteAddr replaces
// the whitelist; a non-admin may do none of it.
func TestACLCommands(t *testing.T) {
	t.Parallel()
	ns, b, acl := startACLBroker(t)
	admin := map[string]string{"NAMESRV_ADDR": ns, "TIDE_ACCESS_KEY": "toolsAdmin", "TIDE_SECRET_KEY": "toolsAdminSecret"}
	tenant := map[string]string{"NAMESRV_ADDR": ns, "TIDE_ACCESS_KEY": "tenantX", "TIDE_SECRET_KEY": "tenantXSecret"}
	reader := map[string]string{"NAMESRV_ADDR": ns, "TIDE_ACCESS_KEY": "reader", "TIDE_SECRET_KEY": "readerSecret"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // in stdout or stderr
	}{
		{"topic", admin, []string{"updateTopic", "-b", b.Addr(), "-t", "AclCmdTopic", "-r", "1", "-w", "1"}, 0, ""},
		{"acl version", admin, []string{"clusterAclConfigVersion", "-c", "DefaultCluster"}, 0, "#AclConfigVersionNum"},
		{"acl version not as a reader", reader, []string{"clusterAclConfigVersion", "-b", b.Addr()}, 1, "Need admin"},
		{"acl version without target", admin, []string{"clusterAclConfigVersion"}, 2, "-c cluster or -b brokerAddr"},
		{"unknown account", tenant, []string{"topicStatus", "-t", "AclCmdTopic"}, 1, "No acl config for tenantX"},
		{"create", admin, []string{"updateAclConfig", "-a", "tenantX", "-s", "tenantXSecret", "-i", "DENY", "-t", "AclCmdTopic=PUB|SUB", "-b", b.Addr()}, 0, "success"},
		{"the new account reads its topic", tenant, []string{"topicStatus", "-t", "AclCmdTopic"}, 0, ""},
		{"narrow", admin, []string{"updateAclConfig", "-a", "tenantX", "-t", "AclCmdTopic=DENY", "-c", "DefaultCluster"}, 0, "success"},
		{"narrowed", tenant, []string{"topicStatus", "-t", "AclCmdTopic"}, 1, "No permission"},
		{"not as a reader", reader, []string{"updateAclConfig", "-a", "tenantX", "-m", "-b", b.Addr()}, 1, "Need admin"},
		{"invalid account", admin, []string{"updateAclConfig", "-a", "short", "-s", "x", "-b", b.Addr()}, 1, "shorter than 6"},
		{"no target", admin, []string{"updateAclConfig", "-a", "tenantX"}, 2, "-c cluster or -b brokerAddr"},
		{"delete", admin, []string{"deleteAclConfig", "-a", "tenantX", "-b", b.Addr()}, 0, "success"},
		{"deleted", tenant, []string{"topicStatus", "-t", "AclCmdTopic"}, 1, "No acl config for tenantX"},
		{"delete again", admin, []string{"deleteAclConfig", "-a", "tenantX", "-b", b.Addr()}, 1, "no such account"},
		{"whitelist", admin, []string{"updateGlobalWhiteAddr", "-g", "10.7.7.*,10.8.0.0/16", "-b", b.Addr()}, 0, "success"},
	}
	version := func() aclVersionRow {
		t.Helper()
		r := runEnv(t, admin, "clusterAclConfigVersion", "-b", b.Addr(), "--json")
		var rows []aclVersionRow
		if r.code != 0 || fromJSON(r.stdout, &rows) != nil || len(rows) != 1 || rows[0].Checksum == "" || rows[0].UpdatedAt == 0 {
			t.Fatalf("clusterAclConfigVersion: exit %d, stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		return rows[0]
	}
	before := version()
	if before.Counter != 1 || before.BrokerName != "broker-a" || before.Cluster != "DefaultCluster" {
		t.Fatalf("ACL version at start: %+v, want counter 1 of broker-a in DefaultCluster", before)
	}
	for _, tt := range tests { // in order
		r := runEnv(t, tt.env, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
			t.Fatalf("%s: exit %d (want %d), stdout %q stderr %q (want %q)", tt.name, r.code, tt.code, r.stdout, r.stderr, tt.want)
		}
	}
	// Four changes went through (create, narrow, delete, whitelist); the
	// refused ones changed nothing.
	if after := version(); after.Counter != before.Counter+4 || after.Checksum == before.Checksum {
		t.Fatalf("ACL version after four changes: %+v, before %+v", after, before)
	}
	data, err := os.ReadFile(acl)
	if err != nil || !strings.Contains(string(data), "10.8.0.0/16") || strings.Contains(string(data), "tenantX") {
		t.Fatalf("ACL file after the commands (%v):\n%s", err, data)
	}
}
