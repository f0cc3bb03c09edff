package data

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/services/kit/reconcile"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// Classes of the "broker" job.
const (
	// ClassStuckHalf: a half message older than the half timeout (its
	// transaction was never decided: checks failing or exhausted).
	ClassStuckHalf reconcile.Class = "stuck_half"
	// ClassDeadLetter: a message in a %DLQ%<group> topic.
	ClassDeadLetter reconcile.Class = "dead_letter"
)

// JobBroker is the broker job's name.
const JobBroker = "broker"

// BrokerJob reports broker state nobody else looks at
// (reconcile.Job): half messages older than HalfTimeout on every master
// (Tide request 10001) and the messages in dead-letter topics. It only
// reports (no Action): deciding a half message or replaying a dead
// letter is an operator's call (mqadmin half commit|rollback, resend).
// One page: brokers hold few of either when healthy.
type BrokerJob struct {
	// Client, when set, is the process's client the job's admin and pull
	// consumer run on; NameServers and ClientOptions then do not apply.
	Client      *mqclient.Client
	NameServers []string
	// ClientOptions are added to the NameServers of the job's admin and
	// pull consumer (e.g. mqclient.WithCredentials).
	ClientOptions []mqclient.Option
	HalfTimeout   time.Duration
	// MaxDLQ caps the dead letters reported per queue (default 100).
	MaxDLQ int
}

func (j *BrokerJob) clientOptions() []mqclient.Option {
	if j.Client != nil {
		return []mqclient.Option{mqclient.WithClient(j.Client)}
	}
	return append([]mqclient.Option{mqclient.WithNameServers(j.NameServers...)}, j.ClientOptions...)
}

// Name implements reconcile.Job.
func (j *BrokerJob) Name() string { return JobBroker }

// Repair implements reconcile.Job; nothing is repairable automatically.
func (j *BrokerJob) Repair(context.Context, reconcile.Discrepancy, string) error {
	return fmt.Errorf("data: broker discrepancies are repaired by an operator")
}

// Check implements reconcile.Job.
func (j *BrokerJob) Check(ctx context.Context, s reconcile.Scan) (reconcile.Page, error) {
	a, err := mqclient.NewAdmin(j.clientOptions()...)
	if err != nil {
		return reconcile.Page{}, err
	}
	if err := a.Start(ctx); err != nil {
		return reconcile.Page{}, err
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	var page reconcile.Page
	if err := j.halves(ctx, a, s.AsOf, &page); err != nil {
		return reconcile.Page{}, err
	}
	if err := j.deadLetters(ctx, a, &page); err != nil {
		return reconcile.Page{}, err
	}
	return page, nil
}

func (j *BrokerJob) halves(ctx context.Context, a *mqclient.Admin, asOf time.Time, page *reconcile.Page) error {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return fmt.Errorf("data: cluster info: %w", err)
	}
	names := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	timeout := j.HalfTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	for _, n := range names {
		addr := ci.BrokerAddrTable[n].BrokerAddrs[0]
		if addr == "" {
			continue
		}
		hs, err := a.HalfMessages(ctx, addr)
		if err != nil {
			return fmt.Errorf("data: half messages of %s: %w", addr, err)
		}
		for _, h := range hs {
			page.Checked++
			age := asOf.Sub(h.StoreTime)
			if age <= timeout {
				continue
			}
			page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{
				Key: "half:" + n + ":" + h.MsgID, Class: ClassStuckHalf,
				Evidence: map[string]any{"broker": n, "addr": addr, "half": h, "age": age.Round(time.Second).String(),
					"timeout": timeout.String(), "hint": "mqadmin half list / commit / rollback"},
			})
		}
	}
	return nil
}

func (j *BrokerJob) deadLetters(ctx context.Context, a *mqclient.Admin, page *reconcile.Page) error {
	topics, err := a.Topics(ctx)
	if err != nil {
		return fmt.Errorf("data: topics: %w", err)
	}
	var dlqs []string
	for _, t := range topics {
		if strings.HasPrefix(t, protocol.DLQTopicPrefix) {
			dlqs = append(dlqs, t)
		}
	}
	if len(dlqs) == 0 {
		return nil
	}
	sort.Strings(dlqs)
	pc, err := mqclient.NewPullConsumer("payment-reconcile-dlq", j.clientOptions()...)
	if err != nil {
		return err
	}
	if err := pc.Start(ctx); err != nil {
		return err
	}
	defer pc.Shutdown(context.WithoutCancel(ctx))
	max := j.MaxDLQ
	if max <= 0 {
		max = 100
	}
	for _, t := range dlqs {
		qs, err := pc.Queues(ctx, t)
		if err != nil {
			return fmt.Errorf("data: queues of %s: %w", t, err)
		}
		for _, q := range qs {
			off, n := int64(0), 0
			for n < max {
				res, err := pc.Pull(ctx, q, "*", off, 32, 0)
				if err != nil {
					return fmt.Errorf("data: pull %s: %w", t, err)
				}
				if res.Status == mqclient.PullOffsetIllegal && res.NextOffset != off {
					off = res.NextOffset
					continue
				}
				if res.Status != mqclient.PullFound {
					break
				}
				for _, m := range res.Messages {
					page.Checked++
					n++
					page.Discrepancies = append(page.Discrepancies, reconcile.Discrepancy{
						Key: "dlq:" + strings.TrimPrefix(t, protocol.DLQTopicPrefix) + ":" + m.MsgID, Class: ClassDeadLetter,
						Evidence: map[string]any{"topic": t, "group": strings.TrimPrefix(t, protocol.DLQTopicPrefix), "msg_id": m.MsgID,
							"keys": m.Keys, "tag": m.Tag, "origin_topic": m.Properties["RETRY_TOPIC"],
							"reconsume_times": m.ReconsumeTimes, "body_bytes": len(m.Body), "born": m.BornTimestamp,
							"hint": "mqadmin resend after fixing the consumer"},
					})
				}
				off = res.NextOffset
			}
		}
	}
	return nil
}

// NewBrokerJob returns the broker job on the process's client mc, with
// c's half-message timeout.
func NewBrokerJob(c *conf.Reconcile, mc *mqclient.Client) biz.BrokerCheck {
	return &BrokerJob{Client: mc, HalfTimeout: c.GetHalfTimeout().AsDuration()}
}
