package acl

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestUpsertAndDeleteAccount(t *testing.T) {
	base := func() File {
		return File{Accounts: []FileAccount{{AccessKey: "tenantA", SecretKey: "secretA", DefaultTopicPerm: "DENY",
			TopicPerms: []string{"a=PUB"}, GroupPerms: []string{"g=SUB"}, Admin: true}}}
	}
	cases := []struct {
		name string
		h    protocol.CreateAccessConfigRequestHeader
		want FileAccount
	}{
		{"empty fields keep values, admin always taken", protocol.CreateAccessConfigRequestHeader{AccessKey: "tenantA"},
			FileAccount{AccessKey: "tenantA", SecretKey: "secretA", DefaultTopicPerm: "DENY", TopicPerms: []string{"a=PUB"}, GroupPerms: []string{"g=SUB"}}},
		{"lists replaced", protocol.CreateAccessConfigRequestHeader{AccessKey: "tenantA", Admin: true, TopicPerms: "b=SUB, c=PUB|SUB", SecretKey: "secretB"},
			FileAccount{AccessKey: "tenantA", SecretKey: "secretB", Admin: true, DefaultTopicPerm: "DENY", TopicPerms: []string{"b=SUB", "c=PUB|SUB"}, GroupPerms: []string{"g=SUB"}}},
		{"new account appended", protocol.CreateAccessConfigRequestHeader{AccessKey: "tenantB", SecretKey: "secretB", WhiteRemoteAddress: "10.0.0.*", DefaultGroupPerm: "SUB"},
			FileAccount{AccessKey: "tenantB", SecretKey: "secretB", WhiteRemoteAddress: "10.0.0.*", DefaultGroupPerm: "SUB"}},
	}
	for _, tc := range cases {
		f := base()
		UpsertAccount(&f, &tc.h)
		got := f.Accounts[f.index(tc.h.AccessKey)]
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	f := base()
	if err := DeleteAccount(&f, "nobody"); !errors.Is(err, ErrNoAccount) {
		t.Errorf("delete missing: %v", err)
	}
	if err := DeleteAccount(&f, "tenantA"); err != nil || len(f.Accounts) != 0 {
		t.Errorf("delete: %v %+v", err, f.Accounts)
	}
}

// TestReplaceRoundTrip: a document written by Replace parses back to the
// same checksum (so a replica does not rewrite an unchanged document), an
// invalid one changes nothing, and Update edits the configuration in force.
func TestReplaceRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := Open(path, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	doc := v.Config().Document()
	if doc.Checksum != v.Config().Checksum() || doc.Checksum != protocol.ACLChecksum(&doc) {
		t.Fatalf("checksums differ: %s %s", doc.Checksum, v.Config().Checksum())
	}
	// the file as written by Replace has the same document
	if err := v.Replace(FromDocument(&doc)); err != nil {
		t.Fatal(err)
	}
	if got := v.Config().Checksum(); got != doc.Checksum {
		t.Fatalf("checksum after a round trip %s, want %s", got, doc.Checksum)
	}
	reparsed, err := ParseFile(path)
	if err != nil || reparsed.Checksum() != doc.Checksum {
		t.Fatalf("file written: %v, checksum %s", err, reparsed.Checksum())
	}
	// invalid: refused, nothing changes
	bad := FromDocument(&doc)
	bad.Accounts[0].SecretKey = "x"
	if err := v.Replace(bad); !errors.Is(err, ErrConfig) {
		t.Fatalf("invalid document: %v", err)
	}
	if v.Config().Checksum() != doc.Checksum {
		t.Fatal("an invalid document changed the configuration")
	}
	// Update edits the configuration in force and loads it
	if err := v.Update(func(f *File) error { f.GlobalWhiteRemoteAddresses = []string{"10.1.2.3"}; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := v.Config().Document().GlobalWhiteRemoteAddresses; !reflect.DeepEqual(got, []string{"10.1.2.3"}) {
		t.Fatalf("whitelist after Update: %v", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
}
