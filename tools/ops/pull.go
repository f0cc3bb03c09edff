package ops

import (
	"context"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// PullRange reads the messages of qs with pc, each queue from its start
// offset up to the queue's end as it was when reading it began, at most
// limit in total (0: no limit), stopping at the first message stored after
// end (zero: no end). visit is called for each message in queue order;
// returning false stops. An offset the broker calls illegal is moved to
// the one it suggests (an offset before the queue's first message starts
// at its first).
func PullRange(ctx context.Context, pc *mqclient.PullConsumer, qs []mqclient.Queue, start func(mqclient.Queue) (int64, error),
	limit int, end time.Time, visit func(*mqclient.MessageExt) bool) error {
	n := 0
	for _, q := range qs {
		off, err := start(q)
		if err != nil {
			return err
		}
		stop := int64(-1)
		for {
			if limit > 0 && n >= limit {
				return nil
			}
			batch := 32
			if limit > 0 {
				batch = min(batch, limit-n)
			}
			res, err := pc.Pull(ctx, q, "*", off, batch, 0)
			if err != nil {
				return err
			}
			if stop < 0 {
				stop = res.MaxOffset
			}
			if res.Status == mqclient.PullOffsetIllegal {
				if res.NextOffset == off {
					break
				}
				off = res.NextOffset
				continue
			}
			done := false
			for _, m := range res.Messages {
				if m.QueueOffset >= stop || (!end.IsZero() && m.StoreTimestamp.After(end)) {
					done = true
					break
				}
				n++
				if !visit(m) {
					return nil
				}
				if limit > 0 && n >= limit {
					return nil
				}
			}
			if done || res.Status == mqclient.PullNoNewMessage || res.NextOffset <= off || res.NextOffset >= stop {
				break
			}
			off = res.NextOffset
		}
	}
	return nil
}
