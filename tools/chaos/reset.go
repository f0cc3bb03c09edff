package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// groupInstances returns the restartable instances of a clustering group.
func groupInstances(group string) []string {
	prefix := map[string]string{GroupAll: "c-all-", GroupOrdered: "c-ord-"}[group]
	var out []string
	for _, name := range ConsumerInstances {
		if prefix != "" && strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// ResetOffsets does what an operator does to replay a group from time at
// (mqadmin resetOffsetByTime on a stopped group): it stops the group's
// instances (each commits its progress first), then moves the committed
// offset of every queue of the group's topics back to the first message
// stored at or after at (never forward), recording each reset (OpReset:
// an invoke before the request, so a reading taken while it runs is not
// mistaken for a violation, then its outcome). StartGroup restarts the
// instances, which resume from the reset offsets.
func (w *Workload) ResetOffsets(ctx context.Context, group string, at time.Time) error {
	var errs []error
	for _, name := range groupInstances(group) {
		errs = append(errs, w.StopConsumer(ctx, name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop %s: %w", group, err)
	}
	addr := w.master()
	if addr == "" {
		return fmt.Errorf("reset %s: no master known", group)
	}
	for _, topic := range Groups[group] {
		for qid := range queuesPerTopic {
			q := mqclient.Queue{Topic: topic, BrokerName: w.brokerName, QueueID: int32(qid)}
			e := Event{Process: "operator", Op: OpReset, Group: group,
				Queue: fmt.Sprintf("%s/%s/%d", q.Topic, q.BrokerName, q.QueueID), Detail: "to " + at.UTC().Format(time.RFC3339Nano)}
			inv := e
			inv.Type = Invoke
			w.rec.Record(inv)
			res, err := w.admin.ResetOffset(ctx, addr, group, q, at, true)
			e.Type, e.Offset = OK, res.NewOffset
			if err != nil {
				e.Type, e.Error = Info, err.Error()
				errs = append(errs, err)
			} else {
				e.Detail += fmt.Sprintf(", from %d", res.OldOffset)
			}
			w.rec.Record(e)
		}
	}
	return errors.Join(errs...)
}

// StartGroup starts the group's instances that are not running.
func (w *Workload) StartGroup(ctx context.Context, group string) error {
	var errs []error
	for _, name := range groupInstances(group) {
		if !w.ConsumerRunning(name) {
			errs = append(errs, w.StartConsumer(ctx, name))
		}
	}
	return errors.Join(errs...)
}
