package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/tools/ops"
)

// brokerRef is one broker process.
type brokerRef = ops.Broker

// brokers lists the brokers the NameServers know, sorted by cluster, name
// and id, limited to cluster when it is set and to masters when
// mastersOnly is set; none is an error.
func brokers(ctx context.Context, a *mqclient.Admin, cluster string, mastersOnly bool) ([]brokerRef, error) {
	out, err := ops.Brokers(ctx, a, cluster, mastersOnly)
	if err == nil && len(out) == 0 {
		err = errors.New("the NameServers know no broker")
	}
	return out, err
}

// targets resolves -b addr / -c cluster into the brokers to ask. An
// explicit address is used as is.
func targets(ctx context.Context, a *mqclient.Admin, addr, cluster string, mastersOnly bool) ([]brokerRef, error) {
	if addr != "" {
		return []brokerRef{{Addr: addr, BrokerID: -1}}, nil
	}
	return brokers(ctx, a, cluster, mastersOnly)
}

func runClusterList(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("clusterList", "[-c cluster]")
	cluster := fs.String("c", "", "only this cluster")
	if err := parse(fs, args); err != nil {
		return err
	}
	a, err := e.admin(ctx, co)
	if err != nil {
		return err
	}
	defer shutdown(a)
	bs, err := brokers(ctx, a, *cluster, false)
	if err != nil {
		return err
	}
	return e.emit(co.json, bs, func(tw *tabwriter.Writer) {
		row(tw, "#Cluster", "#BrokerName", "#BID", "#Addr")
		for _, b := range bs {
			row(tw, b.Cluster, b.BrokerName, b.BrokerID, b.Addr)
		}
	})
}

// fetchHAStatus returns a broker's replication status.
func fetchHAStatus(ctx context.Context, a *mqclient.Admin, addr string) (*protocol.HAStatus, error) {
	st, err := a.HAStatus(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("replication status of %s: %w", addr, err)
	}
	return st, nil
}

func fetchTopicConfigs(ctx context.Context, a *mqclient.Admin, addr string) (*protocol.TopicConfigSerializeWrapper, error) {
	w, err := a.TopicConfigs(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("topic configs of %s: %w", addr, err)
	}
	return w, nil
}

// brokerStatus is one row of brokerStatus.
type brokerStatus struct {
	brokerRef
	Role          string             `json:"role,omitempty"`
	CommitLogSize int64              `json:"commitLogMaxOffset"`
	Topics        int                `json:"topics"`
	Replication   *protocol.HAStatus `json:"replication,omitempty"`
	Error         string             `json:"error,omitempty"`
}

func runBrokerStatus(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("brokerStatus", "-b brokerAddr | [-c cluster]")
	addr := fs.String("b", "", "broker address (host:port); default every broker of the cluster")
	cluster := fs.String("c", "", "cluster name")
	if err := parse(fs, args); err != nil {
		return err
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
	var out []brokerStatus
	failed := 0
	for _, t := range ts {
		bs := brokerStatus{brokerRef: t}
		st, err := fetchHAStatus(ctx, a, t.Addr)
		if err == nil {
			var tc *protocol.TopicConfigSerializeWrapper
			if tc, err = fetchTopicConfigs(ctx, a, t.Addr); err == nil {
				bs.Topics = len(tc.TopicConfigTable)
			}
		}
		if err != nil {
			bs.Error = err.Error()
			failed++
		} else {
			bs.BrokerName, bs.BrokerID, bs.Role, bs.CommitLogSize, bs.Replication = st.BrokerName, st.BrokerID, st.Role, st.MaxPhyOffset, st
		}
		out = append(out, bs)
	}
	err = e.emit(co.json, out, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#BID", "#Addr", "#Role", "#CommitLogMaxOffset", "#Topics", "#Replication")
		for _, b := range out {
			if b.Error != "" {
				row(tw, b.BrokerName, b.BrokerID, b.Addr, "ERROR", "-", "-", b.Error)
				continue
			}
			row(tw, b.BrokerName, b.BrokerID, b.Addr, b.Role, b.CommitLogSize, b.Topics, replicationSummary(b.Replication))
		}
	})
	if err == nil && failed > 0 {
		return fmt.Errorf("%d of %d brokers did not answer: %w", failed, len(out), errFailed)
	}
	return err
}

func replicationSummary(st *protocol.HAStatus) string {
	switch {
	case st == nil:
		return "-"
	case st.Client != nil:
		state := "disconnected"
		if st.Client.Connected {
			state = "connected"
		}
		return fmt.Sprintf("slave of %s (%s)", st.Client.MasterAddr, state)
	case st.Server != nil:
		var maxLag int64
		for _, s := range st.Server.Slaves {
			maxLag = max(maxLag, s.LagBytes)
		}
		return fmt.Sprintf("%d slave(s), max lag %d bytes", len(st.Server.Slaves), maxLag)
	}
	return "-"
}

// haRow is one line of haStatus: a master-slave link seen from one side.
type haRow struct {
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
	Role       string `json:"role"`
	MaxOffset  int64  `json:"maxOffset"`
	Peer       string `json:"peer,omitempty"`
	State      string `json:"state"`
	AckedOff   int64  `json:"ackedOffset"`
	LagBytes   int64  `json:"lagBytes"`
	LagSeconds string `json:"lag"`
}

func runHAStatus(ctx context.Context, e *cli, args []string) error {
	fs, co := e.flags("haStatus", "-b brokerAddr | [-c cluster]")
	addr := fs.String("b", "", "broker address (host:port); default every broker of the cluster")
	cluster := fs.String("c", "", "cluster name")
	if err := parse(fs, args); err != nil {
		return err
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
	var rows []haRow
	var raw []*protocol.HAStatus
	for _, t := range ts {
		st, err := fetchHAStatus(ctx, a, t.Addr)
		if err != nil {
			return err
		}
		raw = append(raw, st)
		base := haRow{BrokerName: st.BrokerName, BrokerID: st.BrokerID, Addr: t.Addr, Role: st.Role, MaxOffset: st.MaxPhyOffset}
		switch {
		case st.Client != nil:
			r := base
			r.Peer, r.State = st.Client.MasterAddr, "disconnected"
			if st.Client.Connected {
				r.State = "connected"
			}
			r.AckedOff = st.Client.MaxOffset
			r.LagBytes, r.LagSeconds = -1, "-"
			rows = append(rows, r)
		case st.Server != nil && len(st.Server.Slaves) > 0:
			for _, s := range st.Server.Slaves {
				r := base
				r.Peer, r.State, r.AckedOff, r.LagBytes = s.Addr, "handshake", s.AckedOffset, s.LagBytes
				if s.Ready {
					r.State = "streaming"
				}
				r.LagSeconds = s.LagTime.Round(time.Millisecond).String()
				rows = append(rows, r)
			}
		default:
			r := base
			r.State, r.LagSeconds = "no slave", "-"
			rows = append(rows, r)
		}
	}
	if co.json {
		return e.emit(true, raw, nil)
	}
	return e.emit(false, nil, func(tw *tabwriter.Writer) {
		row(tw, "#BrokerName", "#BID", "#Addr", "#Role", "#MaxOffset", "#Peer", "#State", "#AckedOffset", "#LagBytes", "#Lag")
		for _, r := range rows {
			lag := "-"
			if r.LagBytes >= 0 {
				lag = strconv.FormatInt(r.LagBytes, 10)
			}
			peer := r.Peer
			if peer == "" {
				peer = "-"
			}
			row(tw, r.BrokerName, r.BrokerID, r.Addr, r.Role, r.MaxOffset, peer, r.State, r.AckedOff, lag, r.LagSeconds)
		}
	})
}
