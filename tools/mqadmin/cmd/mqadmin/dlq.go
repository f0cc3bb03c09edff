package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

func runDLQ(ctx context.Context, e *cli, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintln(e.stderr, "usage: mqadmin dlq list -g group [flags] | mqadmin dlq resend -g group [flags]")
			return nil
		}
		return usagef("want a subcommand: dlq list | dlq resend")
	}
	switch args[0] {
	case "list":
		return runDLQList(ctx, e, args[1:])
	case "resend":
		return runDLQResend(ctx, e, args[1:])
	}
	return usagef("unknown dlq subcommand %q (list, resend)", args[0])
}

// dlqRow is one dead letter in dlq list.
type dlqRow struct {
	messageView
	OriginTopic string `json:"originTopic"`
	OriginMsgID string `json:"originMsgId"`
}

func dlqRowOf(m *mqclient.MessageExt) dlqRow {
	return dlqRow{messageView: viewOf(m), OriginTopic: m.Properties[protocol.PropRetryTopic], OriginMsgID: m.Properties[protocol.PropOriginMessageID]}
}

// dlqSelection are the flags that choose dead letters.
type dlqSelection struct {
	group string
	off   int64
	count int
	ids   string
}

func (s *dlqSelection) register(fs interface {
	StringVar(*string, string, string, string)
	Int64Var(*int64, string, int64, string)
	IntVar(*int, string, int, string)
}) {
	fs.StringVar(&s.group, "g", "", "consumer group whose dead letters (%DLQ%group) to read")
	fs.Int64Var(&s.off, "o", 0, "first DLQ queue offset to read")
	fs.IntVar(&s.count, "c", 100, "maximum number of dead letters")
	fs.StringVar(&s.ids, "i", "", "only these messages: comma-separated offset or unique message ids")
}

// read visits the selected dead letters in order.
func (s *dlqSelection) read(ctx context.Context, pc *mqclient.PullConsumer, visit func(*mqclient.MessageExt) bool) error {
	topic := mqclient.DLQTopicPrefix + s.group
	qs, err := pc.Queues(ctx, topic)
	if err != nil {
		return fmt.Errorf("dead letters of %s: %w", s.group, err)
	}
	want := map[string]bool{}
	for _, id := range strings.Split(s.ids, ",") {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
		}
	}
	limit := s.count
	if len(want) > 0 {
		limit = 0 // scan until every id is found
	}
	return pullRange(ctx, pc, qs, func(mqclient.Queue) (int64, error) { return s.off, nil }, limit, time.Time{}, func(m *mqclient.MessageExt) bool {
		if len(want) == 0 {
			return visit(m)
		}
		if !want[m.OffsetMsgID] && !want[m.MsgID] {
			return true
		}
		delete(want, m.OffsetMsgID)
		delete(want, m.MsgID)
		return visit(m) && len(want) > 0
	})
}

func runDLQList(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("dlq list", "-g group [-o offset] [-c count] [-i ids]")
	var sel dlqSelection
	sel.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", sel.group); err != nil {
		return err
	}
	if sel.count <= 0 || sel.off < 0 {
		return usagef("-c must be positive and -o not negative")
	}
	pc, err := newPuller(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(pc)
	rows := []dlqRow{}
	if err := sel.read(ctx, pc, func(m *mqclient.MessageExt) bool { rows = append(rows, dlqRowOf(m)); return true }); err != nil {
		return err
	}
	return e.emit(co.json, rows, func(tw *tabwriter.Writer) {
		row(tw, "#Offset", "#OffsetMsgId", "#MsgId", "#OriginTopic", "#Reconsume", "#StoreTime", "#Tags", "#Keys")
		for _, r := range rows {
			row(tw, r.QueueOffset, r.OffsetMsgID, r.MsgID, r.OriginTopic, r.ReconsumeTimes, fmtTime(r.StoreTimestamp), r.Tags, strings.Join(r.Keys, " "))
		}
	})
}

// resendResult is the outcome of re-sending one dead letter.
type resendResult struct {
	Offset      int64  `json:"dlqOffset"`
	OffsetMsgID string `json:"offsetMsgId"`
	MsgID       string `json:"msgId"`
	Target      string `json:"target"`
	OK          bool   `json:"ok"`
	NewMsgID    string `json:"newMsgId,omitempty"`
	Queue       string `json:"queue,omitempty"`
	Error       string `json:"error,omitempty"`
}

// runDLQResend re-sends dead letters, by default to %RETRY%group (only the
// failed group consumes them again), with --to-origin to the original
// topic (every group subscribed to it sees them). Sends are rate limited
// to --rate per second; each message gets a result line. The dead letters
// stay in the DLQ (RocketMQ never deletes single messages), so note the
// last offset to resume with -o.
func runDLQResend(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("dlq resend", "-g group [-o offset] [-c count] [-i ids] [--to-origin] [--rate n] [--dry-run]")
	var sel dlqSelection
	sel.register(fs)
	toOrigin := fs.Bool("to-origin", false, "send to the original topic (all its groups) instead of %RETRY%group")
	rate := fs.Float64("rate", 10, "maximum messages per second")
	dry := fs.Bool("dry-run", false, "print what would be sent, send nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", sel.group); err != nil {
		return err
	}
	if sel.count <= 0 || sel.off < 0 {
		return usagef("-c must be positive and -o not negative")
	}
	if *rate <= 0 || *rate > 10000 {
		return usagef("--rate must be in (0, 10000]")
	}
	pc, err := newPuller(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(pc)
	var msgs []*mqclient.MessageExt
	if err := sel.read(ctx, pc, func(m *mqclient.MessageExt) bool { msgs = append(msgs, m); return true }); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("no dead letters of %s selected", sel.group)
	}
	var p *mqclient.Producer
	if !*dry {
		opts, err := co.clientOptions(mqclient.WithProducerGroup("TOOLS_PRODUCER"), mqclient.WithSendTimeout(co.timeout),
			mqclient.WithInstanceName(fmt.Sprintf("mqadmin-%d", os.Getpid())))
		if err != nil {
			return err
		}
		p, err = mqclient.NewProducer(opts...)
		if err != nil {
			return err
		}
		if err := p.Start(ctx); err != nil {
			return err
		}
		defer shutdown(p)
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	defer tick.Stop()
	var results []resendResult
	failed := 0
	for i, m := range msgs {
		if i > 0 && !*dry {
			select {
			case <-ctx.Done():
				return fmt.Errorf("interrupted after %d of %d messages: %w", i, len(msgs), ctx.Err())
			case <-tick.C:
			}
		}
		r := resendResult{Offset: m.QueueOffset, OffsetMsgID: m.OffsetMsgID, MsgID: m.MsgID}
		var err error
		r.Target, err = ops.ResendTarget(m, sel.group, *toOrigin)
		switch {
		case err != nil:
			r.Error = err.Error()
		case *dry:
			r.OK = true
		default:
			if res, err := p.Send(ctx, ops.ResendCopy(m, r.Target)); err != nil {
				r.Error = err.Error()
			} else {
				r.OK, r.NewMsgID, r.Queue = true, res.MsgID, res.Queue.String()
			}
		}
		if !r.OK {
			failed++
		}
		results = append(results, r)
		if !co.json {
			status := "OK"
			switch {
			case !r.OK:
				status = "FAILED: " + r.Error
			case *dry:
				status = "DRY-RUN"
			default:
				status += " newMsgId=" + r.NewMsgID + " queue=" + r.Queue
			}
			fmt.Fprintf(e.stdout, "[%d/%d] offset=%d %s -> %s %s\n", i+1, len(msgs), r.Offset, r.OffsetMsgID, r.Target, status)
		}
	}
	if co.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "resent %d, failed %d, next offset %d\n", len(msgs)-failed, failed, msgs[len(msgs)-1].QueueOffset+1)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d dead letters were not resent: %w", failed, len(msgs), errFailed)
	}
	return nil
}
