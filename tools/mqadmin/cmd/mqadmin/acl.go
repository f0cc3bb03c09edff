package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ACL commands (RocketMQ 4.x mqadmin's updateAclConfig, deleteAclConfig
// and updateGlobalWhiteAddr, same flags). They need an admin account
// (--access-key/--secret-key). With -c they change the cluster's masters
// only: a slave copies its master's ACL in the metadata sync
// (docs/security.md), so a change made on it would be replaced.

// aclTargets adds -b and -c to fs and returns a function resolving them.
func aclTargets(fs *flag.FlagSet) func(ctx context.Context, a *mqclient.Admin) ([]brokerRef, error) {
	addr := fs.String("b", "", "change this broker address")
	cluster := fs.String("c", "", "change every master of this cluster (slaves copy their master's ACL)")
	return func(ctx context.Context, a *mqclient.Admin) ([]brokerRef, error) {
		if (*cluster == "") == (*addr == "") {
			return nil, usagef("exactly one of -c cluster or -b brokerAddr is required")
		}
		return targets(ctx, a, *addr, *cluster, true)
	}
}

// aclChange runs op on every target and reports each outcome.
func (e *cli) aclChange(ctx context.Context, co *common, what string, resolve func(context.Context, *mqclient.Admin) ([]brokerRef, error),
	op func(ctx context.Context, a *mqclient.Admin, addr string) error) error {
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ts, err := resolve(ctx, a)
	if err != nil {
		return err
	}
	var res []opResult
	failed := 0
	for _, t := range ts {
		cctx, cancel := context.WithTimeout(ctx, co.timeout)
		err := op(cctx, a, t.Addr)
		cancel()
		r := opResult{Target: t.Addr, OK: err == nil}
		if err != nil {
			r.Error, failed = err.Error(), failed+1
		}
		res = append(res, r)
	}
	err = e.emit(co.json, res, func(tw *tabwriter.Writer) {
		for _, r := range res {
			if r.OK {
				row(tw, fmt.Sprintf("%s on %s success", what, r.Target))
			} else {
				row(tw, fmt.Sprintf("%s on %s FAILED: %s", what, r.Target, r.Error))
			}
		}
	})
	if err == nil && failed > 0 {
		return fmt.Errorf("%s failed on %d of %d brokers: %w", what, failed, len(res), errFailed)
	}
	return err
}

func runUpdateACLConfig(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("updateAclConfig", "-a accessKey [-s secretKey] [-w whiteRemoteAddress] [-i defaultTopicPerm] [-u defaultGroupPerm] "+
		"[-t topicPerms] [-g groupPerms] [-m] (-c cluster | -b brokerAddr)")
	var acct protocol.PlainAccessConfig
	fs.StringVar(&acct.AccessKey, "a", "", "the account's access key")
	fs.StringVar(&acct.SecretKey, "s", "", "its secret key (required for a new account; at least 6 characters)")
	fs.StringVar(&acct.WhiteRemoteAddress, "w", "", "addresses that skip signature and permissions")
	fs.StringVar(&acct.DefaultTopicPerm, "i", "", "permission on topics not listed: DENY, PUB, SUB or PUB|SUB")
	fs.StringVar(&acct.DefaultGroupPerm, "u", "", "permission on groups not listed")
	topics := fs.String("t", "", "topic permissions, comma-separated: topicA=PUB,topicB=PUB|SUB (replace the list)")
	groups := fs.String("g", "", "group permissions, comma-separated: groupA=SUB (replace the list)")
	fs.BoolVar(&acct.Admin, "m", false, "an admin account (always set: omitted means not admin)")
	resolve := aclTargets(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-a accessKey", acct.AccessKey); err != nil {
		return err
	}
	acct.TopicPerms, acct.GroupPerms = protocol.SplitList(*topics), protocol.SplitList(*groups)
	return e.aclChange(ctx, co, "update account "+acct.AccessKey, resolve, func(ctx context.Context, a *mqclient.Admin, addr string) error {
		return a.UpdateACLAccount(ctx, addr, acct)
	})
}

func runDeleteACLConfig(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("deleteAclConfig", "-a accessKey (-c cluster | -b brokerAddr)")
	ak := fs.String("a", "", "the account's access key")
	resolve := aclTargets(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-a accessKey", *ak); err != nil {
		return err
	}
	return e.aclChange(ctx, co, "delete account "+*ak, resolve, func(ctx context.Context, a *mqclient.Admin, addr string) error {
		return a.DeleteACLAccount(ctx, addr, *ak)
	})
}

func runUpdateGlobalWhiteAddr(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("updateGlobalWhiteAddr", "-g addresses (-c cluster | -b brokerAddr)")
	addrs := fs.String("g", "", "globalWhiteRemoteAddresses, comma-separated (replace the list; \"\" clears it)")
	resolve := aclTargets(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	list := protocol.SplitList(*addrs)
	return e.aclChange(ctx, co, "update globalWhiteRemoteAddresses", resolve, func(ctx context.Context, a *mqclient.Admin, addr string) error {
		return a.UpdateGlobalWhiteAddrs(ctx, addr, list)
	})
}

// aclVersionRow is one broker's line of clusterAclConfigVersion.
type aclVersionRow struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
	Counter    int64  `json:"aclConfigVersionNum,omitempty"`
	UpdatedAt  int64  `json:"aclLastUpdateTime,omitempty"`
	Checksum   string `json:"aclChecksum,omitempty"`
	Error      string `json:"error,omitempty"`
}

// runClusterACLVersion is RocketMQ's clusterAclConfigVersion: the ACL
// version of every broker (slaves included, so an operator sees whether
// they copied their master's ACL: equal checksums), or of one.
func runClusterACLVersion(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("clusterAclConfigVersion", "(-c cluster | -b brokerAddr)")
	addr := fs.String("b", "", "this broker address")
	cluster := fs.String("c", "", "every broker of this cluster, slaves included")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*cluster == "") == (*addr == "") {
		return usagef("exactly one of -c cluster or -b brokerAddr is required")
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ts, err := targets(ctx, a, *addr, *cluster, false)
	if err != nil {
		return err
	}
	var rows []aclVersionRow
	failed := 0
	for _, t := range ts {
		cctx, cancel := context.WithTimeout(ctx, co.timeout)
		h, v, err := a.ACLVersion(cctx, t.Addr)
		cancel()
		r := aclVersionRow{Cluster: t.Cluster, BrokerName: t.BrokerName, BrokerID: t.BrokerID, Addr: t.Addr}
		if err != nil {
			r.Error, failed = err.Error(), failed+1
		} else {
			r.Cluster, r.BrokerName = h.ClusterName, h.BrokerName
			r.Counter, r.UpdatedAt, r.Checksum = v.Counter, v.Timestamp, h.TideACLChecksum
		}
		rows = append(rows, r)
	}
	err = e.emit(co.json, rows, func(tw *tabwriter.Writer) {
		row(tw, "#Cluster Name", "#Broker Name", "#Broker Addr", "#AclConfigVersionNum", "#AclLastUpdateTime", "#AclChecksum")
		for _, r := range rows {
			if r.Error != "" {
				row(tw, r.Cluster, r.BrokerName, r.Addr, "FAILED: "+r.Error)
				continue
			}
			row(tw, r.Cluster, r.BrokerName, r.Addr, r.Counter, fmtTime(time.UnixMilli(r.UpdatedAt)), r.Checksum)
		}
	})
	if err == nil && failed > 0 {
		return fmt.Errorf("ACL version failed on %d of %d brokers: %w", failed, len(rows), errFailed)
	}
	return err
}
