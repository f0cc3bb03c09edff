package acl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrNoAccount: DeleteAccount names an access key the file does not have.
var ErrNoAccount = errors.New("acl: no such account")

// fileHeader starts every file the broker writes: the file is rewritten
// whole, so comments an operator added are gone.
const fileHeader = "# plain_acl.yml, written by the broker (an ACL admin request, or its master's ACL in the metadata sync).\n" +
	"# It is rewritten whole on the next change: comments are not kept.\n"

// Document returns f as the typed document of the metadata sync, with
// its Checksum set.
func Document(f File) protocol.PlainACLConfig {
	d := protocol.PlainACLConfig{Accounts: []protocol.PlainAccessConfig{}}
	d.GlobalWhiteRemoteAddresses = append(d.GlobalWhiteRemoteAddresses, f.GlobalWhiteRemoteAddresses...)
	for _, a := range f.Accounts {
		d.Accounts = append(d.Accounts, protocol.PlainAccessConfig{
			AccessKey: a.AccessKey, SecretKey: a.SecretKey, WhiteRemoteAddress: a.WhiteRemoteAddress, Admin: a.Admin,
			DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm,
			TopicPerms: append([]string(nil), a.TopicPerms...), GroupPerms: append([]string(nil), a.GroupPerms...),
		})
	}
	d.Checksum = protocol.ACLChecksum(&d)
	return d
}

// FromDocument returns the file of a metadata sync document (a deep copy).
func FromDocument(d *protocol.PlainACLConfig) File {
	var f File
	f.GlobalWhiteRemoteAddresses = append(f.GlobalWhiteRemoteAddresses, d.GlobalWhiteRemoteAddresses...)
	for _, a := range d.Accounts {
		f.Accounts = append(f.Accounts, FileAccount{
			AccessKey: a.AccessKey, SecretKey: a.SecretKey, WhiteRemoteAddress: a.WhiteRemoteAddress, Admin: a.Admin,
			DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm,
			TopicPerms: append([]string(nil), a.TopicPerms...), GroupPerms: append([]string(nil), a.GroupPerms...),
		})
	}
	return f
}

// Document returns the document the configuration was parsed from (what
// a master sends its replicas), its Checksum set.
func (c *Config) Document() protocol.PlainACLConfig { return Document(c.doc) }

// Checksum returns protocol.ACLChecksum of the configuration's document.
func (c *Config) Checksum() string { return c.sum }

// UpsertAccount creates the account h names in f, or updates it: on an
// existing account an empty field keeps its value, admin is always taken
// (RocketMQ's updateAccessConfig).
func UpsertAccount(f *File, h *protocol.CreateAccessConfigRequestHeader) {
	i := f.index(h.AccessKey)
	if i < 0 {
		f.Accounts = append(f.Accounts, FileAccount{AccessKey: h.AccessKey})
		i = len(f.Accounts) - 1
	}
	a := &f.Accounts[i]
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&a.SecretKey, h.SecretKey)
	set(&a.WhiteRemoteAddress, h.WhiteRemoteAddress)
	set(&a.DefaultTopicPerm, h.DefaultTopicPerm)
	set(&a.DefaultGroupPerm, h.DefaultGroupPerm)
	a.Admin = h.Admin
	if h.TopicPerms != "" {
		a.TopicPerms = protocol.SplitList(h.TopicPerms)
	}
	if h.GroupPerms != "" {
		a.GroupPerms = protocol.SplitList(h.GroupPerms)
	}
}

// DeleteAccount removes the account of accessKey from f, or returns
// ErrNoAccount.
func DeleteAccount(f *File, accessKey string) error {
	i := f.index(accessKey)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoAccount, accessKey)
	}
	f.Accounts = append(f.Accounts[:i:i], f.Accounts[i+1:]...)
	return nil
}

func (f *File) index(accessKey string) int {
	for i, a := range f.Accounts {
		if a.AccessKey == accessKey {
			return i
		}
	}
	return -1
}

// Update edits the configuration in force with edit (on a copy of its
// document), then writes and loads the result as Replace does. Updates
// are serialised, so two admin requests never lose each other's change.
func (v *Validator) Update(edit func(*File) error) error {
	v.editMu.Lock()
	defer v.editMu.Unlock()
	d := v.Config().Document()
	f := FromDocument(&d)
	if err := edit(&f); err != nil {
		return err
	}
	return v.replace(f)
}

// Replace validates f, writes it to the validator's file (a temporary file
// in the same directory, fsynced, renamed over the file: a crash leaves the
// old or the new file, never a torn one) and loads it. An invalid f is an
// error matching ErrConfig and changes nothing.
func (v *Validator) Replace(f File) error {
	v.editMu.Lock()
	defer v.editMu.Unlock()
	return v.replace(f)
}

func (v *Validator) replace(f File) error {
	body, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("acl: encode: %w", err)
	}
	data := append([]byte(fileHeader), body...)
	if _, err := Parse(data); err != nil {
		return err
	}
	if err := writeAtomic(v.path, data); err != nil {
		return err
	}
	_, err = v.Reload()
	return err
}

// writeAtomic replaces path with data (mode 0600: the file holds secrets).
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("acl: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("acl: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
