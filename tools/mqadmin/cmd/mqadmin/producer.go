package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

// producerView is producerConnection's JSON output.
type producerView struct {
	Group       string                `json:"group"`
	Connections []protocol.Connection `json:"connections"`
}

// errProducerNotOnline: no master knows a live member of the producer group.
var errProducerNotOnline = errors.New("producer group not online")

func runProducerConnection(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("producerConnection", "-g group [-c cluster]")
	group := fs.String("g", "", "producer group")
	cluster := fs.String("c", "", "only the masters of this cluster")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := require("-g group", *group); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	bs, err := brokers(ctx, a, *cluster, true)
	if err != nil {
		return err
	}
	conns, online, err := ops.ProducerConnections(ctx, a, bs, *group)
	if err != nil {
		return err
	}
	if !online {
		return fmt.Errorf("%w: %s", errProducerNotOnline, *group)
	}
	v := producerView{Group: *group, Connections: conns}
	return e.emit(co.json, v, func(tw *tabwriter.Writer) {
		row(tw, "#ClientId", "#ClientAddr", "#Language", "#Version")
		for _, c := range v.Connections {
			row(tw, c.ClientID, c.ClientAddr, c.Language, c.Version)
		}
	})
}
