package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ACL administration (RocketMQ 4.x plain ACL, codes 50, 51 and 53): an
// admin account changes a broker's plain_acl.yml through requests instead
// of editing the file. The broker rewrites its file (temp + rename) and
// reloads it; a replica copies the master's document in the metadata
// sync (BrokerMetadata.ACL).
const (
	// UpdateAndCreateACLConfig: CreateAccessConfigRequestHeader; creates
	// an account or updates the fields the header carries.
	UpdateAndCreateACLConfig int16 = 50
	// DeleteACLConfig: DeleteAccessConfigRequestHeader; removes an account.
	DeleteACLConfig int16 = 51
	// UpdateGlobalWhiteAddrsConfig: UpdateGlobalWhiteAddrsConfigRequestHeader;
	// replaces globalWhiteRemoteAddresses.
	UpdateGlobalWhiteAddrsConfig int16 = 53
	// GetBrokerClusterACLInfo: no header; the answer is
	// GetBrokerACLConfigResponseHeader, the version of the broker's ACL
	// (what mqadmin clusterAclConfigVersion shows).
	GetBrokerClusterACLInfo int16 = 52
)

// GetBrokerACLConfigResponseHeader answers GET_BROKER_CLUSTER_ACL_INFO
// (52; Java GetBrokerAclConfigResponseHeader). Version is the ACL's
// DataVersion as JSON ({"timestamp":ms,"counter":n}: the counter grows on
// every change the broker loads); allAclFileVersion maps the ACL file's
// path to that version (RocketMQ 4.9.3 and later). TideACLChecksum is
// Tide's: ACLChecksum of the document in force, equal on a master and its
// slaves once the metadata sync has carried the master's ACL over.
//
//rmq:codec
type GetBrokerACLConfigResponseHeader struct {
	Version           string `rmq:"version,required"`
	AllACLFileVersion string `rmq:"allAclFileVersion,omitempty"`
	BrokerName        string `rmq:"brokerName,required"`
	BrokerAddr        string `rmq:"brokerAddr,required"`
	ClusterName       string `rmq:"clusterName,required"`
	TideACLChecksum   string `rmq:"tideAclChecksum,omitempty"`
}

// CreateAccessConfigRequestHeader is UPDATE_AND_CREATE_ACL_CONFIG (50; Java
// CreateAccessConfigRequestHeader). Required: accessKey. For an existing
// account an empty field keeps its value (RocketMQ leaves a null field
// alone); admin is always taken. topicPerms and groupPerms are
// comma-separated name=PERM lists ("topicA=PUB,topicB=SUB|PUB").
//
//rmq:codec
type CreateAccessConfigRequestHeader struct {
	AccessKey          string `rmq:"accessKey,required"`
	SecretKey          string `rmq:"secretKey,omitempty"`
	WhiteRemoteAddress string `rmq:"whiteRemoteAddress,omitempty"`
	Admin              bool   `rmq:"admin"`
	DefaultTopicPerm   string `rmq:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string `rmq:"defaultGroupPerm,omitempty"`
	TopicPerms         string `rmq:"topicPerms,omitempty"`
	GroupPerms         string `rmq:"groupPerms,omitempty"`
}

// DeleteAccessConfigRequestHeader is DELETE_ACL_CONFIG (51). Required:
// accessKey.
//
//rmq:codec
type DeleteAccessConfigRequestHeader struct {
	AccessKey string `rmq:"accessKey,required"`
}

// UpdateGlobalWhiteAddrsConfigRequestHeader is
// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): the new globalWhiteRemoteAddresses,
// comma-separated (empty clears the list).
//
//rmq:codec
type UpdateGlobalWhiteAddrsConfigRequestHeader struct {
	GlobalWhiteAddrs string `rmq:"globalWhiteAddrs"`
}

// SplitList splits a comma-separated header list (topicPerms, groupPerms,
// globalWhiteAddrs), dropping blanks. The empty string is an empty list.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// PlainAccessConfig is one account of a plain ACL document (RocketMQ's
// PlainAccessConfig; the fields of an accounts entry of plain_acl.yml).
type PlainAccessConfig struct {
	AccessKey          string   `json:"accessKey"`
	SecretKey          string   `json:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress,omitempty"`
	Admin              bool     `json:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `json:"topicPerms,omitempty"`
	GroupPerms         []string `json:"groupPerms,omitempty"`
}

// PlainACLConfig is a broker's whole plain ACL document (plain_acl.yml as
// the broker enforces it), as the master sends it to its replicas in
// BrokerMetadata.ACL. Checksum identifies the content: a replica that
// applied a document with the same checksum, and whose file is still what
// it wrote, skips it.
type PlainACLConfig struct {
	GlobalWhiteRemoteAddresses []string            `json:"globalWhiteRemoteAddresses,omitempty"`
	Accounts                   []PlainAccessConfig `json:"accounts"`
	// Checksum: hex SHA-256 of the document's JSON without the checksum
	// (ACLChecksum); the sender sets it.
	Checksum string `json:"checksum"`
}

// ACLChecksum returns the checksum of c's content (its Checksum field
// ignored): the hex SHA-256 of its JSON encoding. Equal documents (same
// accounts in the same order) have equal checksums.
func ACLChecksum(c *PlainACLConfig) string {
	d := *c
	d.Checksum = ""
	sum := sha256.Sum256(mustMarshal(d))
	return hex.EncodeToString(sum[:])
}
