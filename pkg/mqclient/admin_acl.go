package mqclient

import (
	"context"
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ACL administration (RocketMQ 4.x plain ACL): each request changes the
// plain_acl.yml of the one broker at addr. A broker with aclEnable=false
// refuses them; under ACL they need an admin account (WithCredentials).
// With Tide's ACL sync a master's slaves copy its document within one
// metadata sync (2 s in controller mode, 10 s otherwise), so changing the
// masters is enough; a change made on a slave is replaced by its master's
// document at the next sync.

// UpdateACLAccount creates the account acct.AccessKey on the broker at
// addr, or updates it: on an existing account an empty field (and a nil
// TopicPerms or GroupPerms) keeps its value; Admin is always set
// (UPDATE_AND_CREATE_ACL_CONFIG). A new account needs a SecretKey of at
// least 6 characters.
func (a *Admin) UpdateACLAccount(ctx context.Context, addr string, acct protocol.PlainAccessConfig) error {
	h := protocol.CreateAccessConfigRequestHeader{AccessKey: acct.AccessKey, SecretKey: acct.SecretKey,
		WhiteRemoteAddress: acct.WhiteRemoteAddress, Admin: acct.Admin, DefaultTopicPerm: acct.DefaultTopicPerm,
		DefaultGroupPerm: acct.DefaultGroupPerm, TopicPerms: strings.Join(acct.TopicPerms, ","), GroupPerms: strings.Join(acct.GroupPerms, ",")}
	_, err := a.call(ctx, addr, protocol.UpdateAndCreateACLConfig, &h)
	return err
}

// DeleteACLAccount removes the account accessKey from the broker at addr
// (DELETE_ACL_CONFIG).
func (a *Admin) DeleteACLAccount(ctx context.Context, addr, accessKey string) error {
	_, err := a.call(ctx, addr, protocol.DeleteACLConfig, &protocol.DeleteAccessConfigRequestHeader{AccessKey: accessKey})
	return err
}

// UpdateGlobalWhiteAddrs replaces the globalWhiteRemoteAddresses of the
// broker at addr (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG); an empty list clears
// it.
func (a *Admin) UpdateGlobalWhiteAddrs(ctx context.Context, addr string, addrs []string) error {
	h := protocol.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: strings.Join(addrs, ",")}
	_, err := a.call(ctx, addr, protocol.UpdateGlobalWhiteAddrsConfig, &h)
	return err
}

// ACLVersion returns the version of the ACL in force on the broker at addr
// (GET_BROKER_CLUSTER_ACL_INFO): its data version (the counter grows with
// every change the broker loads), broker and cluster names and, from a
// Tide broker, the checksum of its ACL document. A master and its slaves
// with equal checksums enforce the same ACL. A broker with ACL off
// answers SYSTEM_ERROR.
func (a *Admin) ACLVersion(ctx context.Context, addr string) (*protocol.GetBrokerACLConfigResponseHeader, protocol.DataVersion, error) {
	resp, err := a.call(ctx, addr, protocol.GetBrokerClusterACLInfo, nil)
	if err != nil {
		return nil, protocol.DataVersion{}, err
	}
	var h protocol.GetBrokerACLConfigResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, protocol.DataVersion{}, err
	}
	v, err := protocol.DecodeDataVersion([]byte(h.Version))
	if err != nil {
		return nil, protocol.DataVersion{}, err
	}
	return &h, v, nil
}
