package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/registry"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// startReplication starts the HA server on a master (any role but SLAVE)
// or the HA client on a slave. It returns the HA address to register
// (brokerIP2:haListenPort) for a master.
func (b *Broker) startReplication() (string, error) {
	b.roleMu.Lock()
	defer b.roleMu.Unlock()
	if b.opts.IsMaster() {
		return b.startHAServer()
	}
	return "", b.startHAClient(b.opts.HAMasterAddress)
}

// startHAServer starts replication as a master and returns the HA address
// to register. Called with roleMu held.
func (b *Broker) startHAServer() (string, error) {
	o := b.opts
	if o.HAAuthSecret == "" {
		b.log.Warn("the HA port is unauthenticated: anyone reaching it can copy the commit log; set haAuthSecret on master and slaves",
			"addr", net.JoinHostPort(o.HAHost(), strconv.Itoa(o.HAListenPort)))
	}
	srv, err := ha.NewServer(b.store, ha.ServerOptions{
		Addr:         net.JoinHostPort(o.HAHost(), strconv.Itoa(o.HAListenPort)),
		SlaveTimeout: time.Duration(o.SyncFlushTimeoutSlave()) * time.Millisecond,
		Logger:       b.log,
		TLSConfig:    b.sec.haTLS,
		Secret:       []byte(o.HAAuthSecret),
		// controller mode: slaves name their controller id (SyncStateSet)
		ExpectBrokerID: b.ctl != nil,
		OnAck:          b.onHAAck(),
		ConfirmOffset:  b.haConfirmOffset(),
	})
	if err != nil {
		return "", err
	}
	if err := srv.Start(); err != nil {
		return "", err
	}
	b.haSrv.Store(srv)
	_, port, _ := net.SplitHostPort(srv.Addr())
	host := o.BrokerIP2
	if host == "" {
		host = o.BrokerIP1
	}
	return net.JoinHostPort(host, port), nil
}

// startHAClient starts replication as a slave of masterAddr (empty: the
// one the NameServers name, or in controller mode the one the controller
// names once the store agrees with it) and the metadata sync. Called with
// roleMu held.
func (b *Broker) startHAClient(masterAddr string) error {
	o := b.opts
	var id int64
	if b.ctl != nil {
		id = b.ctl.id
	}
	cl, err := ha.NewClient(b.store, ha.ClientOptions{MasterAddr: masterAddr, SegmentSize: o.Store.MappedFileSizeCommitLog, Logger: b.log,
		TLSConfig: b.sec.clientTLS, Secret: []byte(o.HAAuthSecret), BrokerID: id, OnConfirm: b.onHAAck()})
	if err != nil {
		return err
	}
	if err := cl.Start(); err != nil {
		return err
	}
	b.haCli.Store(cl)
	b.slaveEnd = make(chan struct{})
	b.wg.Add(1)
	go b.syncMetadataLoop(b.slaveEnd)
	return nil
}

// stopHAClient ends a slave's replication and metadata sync. Called with
// roleMu held.
func (b *Broker) stopHAClient() {
	if cl := b.haCli.Swap(nil); cl != nil {
		cl.Close()
	}
	if b.slaveEnd != nil {
		close(b.slaveEnd)
		b.slaveEnd = nil
	}
}

// SyncFlushTimeoutSlave is how long a SYNC_MASTER waits for its slave's
// ack (slaveTimeout, 3 s in RocketMQ).
func (o *Options) SyncFlushTimeoutSlave() int {
	if o.SlaveTimeout > 0 {
		return o.SlaveTimeout
	}
	return 3000
}

// onRegistered learns the master's addresses from the NameServers' answer
// (a slave without haMasterAddress follows the master they report).
func (b *Broker) onRegistered(r registry.Result) {
	if b.isMaster() {
		return
	}
	if b.ctl != nil && !b.ctl.mayFollow(r.MasterAddr) {
		return // not (yet) the master the controller named, or not truncated against it yet
	}
	if prev, _ := b.masterAddr.Swap(r.MasterAddr).(string); prev != r.MasterAddr && r.MasterAddr != "" {
		b.SyncMetadataNow() // a new master: copy its topics and offsets now, not at the next tick
	}
	if cl := b.haClient(); cl != nil && b.opts.HAMasterAddress == "" && r.HAServerAddr != "" && cl.MasterAddress() != r.HAServerAddr {
		b.log.Info("following master", "master", r.MasterAddr, "ha", r.HAServerAddr)
		cl.SetMasterAddress(r.HAServerAddr)
	}
}

// waitReplicated makes a SYNC_MASTER send wait for the slave. It returns
// SUCCESS, or FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE (the message is
// stored either way, as with RocketMQ).
func (b *Broker) waitReplicated(ctx context.Context, end int64) int16 {
	srv := b.haServer()
	if srv == nil {
		if b.ctl != nil {
			return protocol.SlaveNotAvailable // demoted while the write was in flight
		}
		return protocol.Success
	}
	if b.brokerRole() != "SYNC_MASTER" {
		srv.Notify()
		return protocol.Success
	}
	var err error
	if b.ctl != nil {
		ids, need := b.ctl.ackRule(&b.opts)
		if need > len(ids) {
			return protocol.SlaveNotAvailable // the SyncStateSet is too small for inSyncReplicas
		}
		err = srv.WaitAcks(ctx, end, ids, need)
	} else {
		err = srv.WaitSlaveAck(ctx, end)
	}
	switch {
	case err == nil:
		return protocol.Success
	case errors.Is(err, ha.ErrSlaveNotAvailable):
		return protocol.SlaveNotAvailable
	default:
		return protocol.FlushSlaveTimeout
	}
}

// handleHAStatus serves TideHAStatus: the replication state as JSON.
func (b *Broker) handleHAStatus(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	st := protocol.HAStatus{BrokerName: b.opts.BrokerName, BrokerID: b.brokerID(), Role: b.brokerRole(),
		MaxPhyOffset: b.store.MaxPhyOffset()}
	if srv := b.haServer(); srv != nil {
		ss := srv.Status()
		st.Server = &ss
	}
	if cl := b.haClient(); cl != nil {
		cs := cl.Status()
		st.Client = &cs
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = st.Encode()
	return resp
}
