package acl

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrConfig wraps every problem found in an ACL file.
var ErrConfig = errors.New("acl: invalid configuration")

// RetryPrefix is the prefix of retry topics. Group permissions are kept
// under the group's retry topic name, as RocketMQ does, so that a send to
// %RETRY%group is checked as a group access.
const RetryPrefix = protocol.RetryTopicPrefix

// minKeyLen is RocketMQ's minimum length of accessKey and secretKey.
const minKeyLen = 6

// File is plain_acl.yml as written. Unknown keys (dataVersion, ...) are
// ignored.
type File struct {
	GlobalWhiteRemoteAddresses []string      `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []FileAccount `yaml:"accounts"`
}

// FileAccount is one entry of accounts.
type FileAccount struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

// Config is a parsed, validated ACL file. It is immutable.
type Config struct {
	globalWhite []addrPattern
	accounts    map[string]*account
	// doc is the document the configuration was parsed from and sum its
	// protocol.ACLChecksum: what a master sends its replicas, and what a
	// replica compares the master's document with.
	doc File
	sum string
}

type account struct {
	accessKey string
	secretKey []byte
	white     *addrPattern // nil: none
	admin     bool
	defTopic  Perm
	defGroup  Perm
	// perms maps topics, and groups as RetryPrefix+group, to their
	// permission; nil when the account lists none (an admin with no
	// lists may do anything).
	perms map[string]Perm
}

// Accounts returns the number of accounts.
func (c *Config) Accounts() int { return len(c.accounts) }

// ParseFile reads and parses an ACL file.
func ParseFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("acl: read %s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse parses the text of plain_acl.yml. Every problem is reported (all
// of them, joined), and nothing of an invalid file is used: an account
// with a malformed permission must not half-apply.
func Parse(data []byte) (*Config, error) {
	var f File
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: yaml: %v", ErrConfig, err)
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	c := &Config{accounts: map[string]*account{}}
	for _, s := range f.GlobalWhiteRemoteAddresses {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := parseAddrPattern(s)
		if err != nil {
			bad("globalWhiteRemoteAddresses: %v", err)
			continue
		}
		c.globalWhite = append(c.globalWhite, p)
	}
	for i, fa := range f.Accounts {
		where := fmt.Sprintf("accounts[%d]", i)
		a := &account{
			accessKey: strings.TrimSpace(fa.AccessKey),
			secretKey: []byte(strings.TrimSpace(fa.SecretKey)),
			admin:     fa.Admin,
			defTopic:  ParsePerm(fa.DefaultTopicPerm),
			defGroup:  ParsePerm(fa.DefaultGroupPerm),
		}
		if len(a.accessKey) < minKeyLen {
			bad("%s: accessKey %q shorter than %d characters", where, a.accessKey, minKeyLen)
		}
		if len(a.secretKey) < minKeyLen {
			bad("%s (%s): secretKey shorter than %d characters", where, a.accessKey, minKeyLen)
		}
		if _, dup := c.accounts[a.accessKey]; dup {
			bad("%s: accessKey %q defined twice", where, a.accessKey)
		}
		if w := strings.TrimSpace(fa.WhiteRemoteAddress); w != "" {
			p, err := parseAddrPattern(w)
			if err != nil {
				bad("%s (%s): whiteRemoteAddress: %v", where, a.accessKey, err)
			} else {
				a.white = &p
			}
		}
		for _, list := range []struct {
			entries []string
			group   bool
		}{{fa.TopicPerms, false}, {fa.GroupPerms, true}} {
			for _, e := range list.entries {
				name, perm, ok := strings.Cut(e, "=")
				name = strings.TrimSpace(name)
				if !ok || name == "" || strings.Contains(perm, "=") {
					bad("%s (%s): permission %q is not name=PERM", where, a.accessKey, e)
					continue
				}
				if a.perms == nil {
					a.perms = map[string]Perm{}
				}
				if list.group {
					name = RetryPrefix + name
				}
				a.perms[name] = ParsePerm(perm)
			}
		}
		c.accounts[a.accessKey] = a
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrConfig, strings.Join(errs, "; "))
	}
	c.doc = f
	d := Document(f)
	c.sum = d.Checksum
	return c, nil
}
