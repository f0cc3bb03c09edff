package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// halfRow is a half message with the broker that holds it.
type halfRow struct {
	Broker string `json:"broker"`
	protocol.HalfMessage
}

func runHalf(ctx context.Context, e *cli, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintln(e.stderr, "usage: mqadmin half list [-b brokerAddr | -c cluster] | half resume|commit|rollback -b brokerAddr -o queueOffset --operator name")
			return nil
		}
		return usagef("want a subcommand: half list | resume | commit | rollback")
	}
	switch args[0] {
	case "list":
		return runHalfList(ctx, e, args[1:])
	case "resume":
		return runHalfAction(ctx, e, "resume", args[1:])
	case "commit":
		return runHalfAction(ctx, e, "commit", args[1:])
	case "rollback":
		return runHalfAction(ctx, e, "rollback", args[1:])
	}
	return usagef("unknown half subcommand %q (list, resume, commit, rollback)", args[0])
}

func listHalf(ctx context.Context, a *mqclient.Admin, addr string) ([]protocol.HalfMessage, error) {
	hs, err := a.HalfMessages(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("half messages of %s: %w", addr, err)
	}
	return hs, nil
}

func runHalfList(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("half list", "[-b brokerAddr | -c cluster] [--parked]")
	addr := fs.String("b", "", "master address (default every master)")
	cluster := fs.String("c", "", "only the masters of this cluster")
	parked := fs.Bool("parked", false, "only parked half messages (checks exhausted)")
	if err := parse(fs, args); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	ts, err := targets(ctx, a, *addr, *cluster, true)
	if err != nil {
		return err
	}
	rows := []halfRow{}
	for _, t := range ts {
		hs, err := listHalf(ctx, a, t.Addr)
		if err != nil {
			return err
		}
		for _, h := range hs {
			if !*parked || h.Parked {
				rows = append(rows, halfRow{Broker: t.Addr, HalfMessage: h})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Broker != rows[j].Broker {
			return rows[i].Broker < rows[j].Broker
		}
		return rows[i].QueueOffset < rows[j].QueueOffset
	})
	now := time.Now()
	return e.emit(co.json, rows, func(tw *tabwriter.Writer) {
		row(tw, "#Broker", "#QueueOffset", "#CommitLogOffset", "#ProducerGroup", "#Topic", "#MsgId", "#Age", "#Checks", "#NextCheck", "#State")
		for _, r := range rows {
			state, next := "pending", fmtTime(r.NextCheck)
			if r.Parked {
				state, next = "PARKED", "-"
			}
			row(tw, r.Broker, r.QueueOffset, r.CommitLogOffset, r.ProducerGroup, r.Topic, r.MsgID, now.Sub(r.StoreTime).Round(time.Second),
				r.Checks, next, state)
		}
	})
}

// runHalfAction resumes checks of, commits or rolls back one half message
// (Tide codes 10002 and 10003). The operator name travels in the request's
// operator field; the broker logs it with the caller's address (audit).
func runHalfAction(ctx context.Context, e *cli, action string, args []string) error {
	fs, co := e.flags("half "+action, "-b brokerAddr -o queueOffset --operator name")
	addr := fs.String("b", "", "master address holding the half message")
	off := fs.Int64("o", -1, "half queue offset (the QueueOffset column of half list)")
	op := fs.String("operator", "", "who takes the action (recorded in the broker's audit log)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-b brokerAddr", *addr, "--operator", *op); err != nil {
		return err
	}
	if *off < 0 {
		return usagef("-o queueOffset is required (>= 0)")
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	var remark string
	if action == "resume" {
		remark, err = a.ResumeHalfCheck(ctx, *addr, *off, *op)
	} else {
		remark, err = a.EndHalfMessage(ctx, *addr, *off, action == "commit", *op)
	}
	if err != nil {
		return fmt.Errorf("%s half message at offset %d on %s: %w", action, *off, *addr, err)
	}
	v := struct {
		Action   string `json:"action"`
		Broker   string `json:"broker"`
		Offset   int64  `json:"queueOffset"`
		Operator string `json:"operator"`
		Remark   string `json:"remark,omitempty"`
	}{action, *addr, *off, *op, remark}
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		msg := fmt.Sprintf("%s half message at offset %d on %s by %s: OK", action, *off, *addr, *op)
		if remark != "" {
			msg += " (" + remark + ")"
		}
		row(tw, msg)
	})
}
