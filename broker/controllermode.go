package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/broker/internal/store/epoch"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Controller mode (enableControllerMode, docs/controller.md): at start
// the broker takes an id from the controller group (kept in
// <storePathRootDir>/config/controllerIdentity.json so a restart keeps
// it), registers its address, asks for an election when its group has no
// master, and runs as master or slave as the controller says. While it
// runs it heartbeats every controller node with its epoch and max offset,
// serves GET_BROKER_EPOCH_CACHE, and follows the controller's decisions
// at runtime (roleswitch.go): NOTIFY_BROKER_ROLE_CHANGED and a poll of
// CONTROLLER_GET_REPLICA_INFO every brokerHeartbeatInterval.

// controllerIdentity is the id a broker holds in its group.
type controllerIdentity struct {
	BrokerID          int64  `json:"brokerId"`
	RegisterCheckCode string `json:"registerCheckCode"`
}

// controllerMode is the broker's side of controller mode.
type controllerMode struct {
	cli        *controllerclient.Client
	rc         *remoting.Client
	epochs     *epoch.File
	id         int64
	masterRole string        // the configured flavour to run as when master (ASYNC_MASTER or SYNC_MASTER)
	wake       chan struct{} // cap 1: a notification arrived, look again now

	followFailedEpoch atomic.Int32 // the master epoch a failure to follow was last logged at WARN for

	mu          sync.Mutex
	master      protocol.MasterInfo // the last master the controller named
	running     string              // the role the broker runs as: "master" or "slave"
	following   string              // master address a slave replicates from, once truncated against it
	followEpoch int32               // the master epoch following was settled under
	syncSet     []int64             // the SyncStateSet the controller committed (master: the ack rule)
	syncEpoch   int32
	proposed    []int64             // master: a SyncStateSet change in flight (nil: none); acks and confirm use syncSet ∪ proposed
	caughtUp    map[int64]time.Time // master: each replica's last catch-up, across reconnects
}

// ControllerRole reports, in controller mode, the role the broker runs as
// ("master" or "slave"), its controller id, and the master the controller
// last named (NoBrokerID without one). ok is false outside controller mode.
func (b *Broker) ControllerRole() (running string, id int64, master protocol.MasterInfo, ok bool) {
	cm := b.ctl
	if cm == nil {
		return "", 0, protocol.MasterInfo{}, false
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.running, cm.id, cm.master, true
}

// holdDispatch is the dispatch limit of a controller-mode broker from
// store.Open until joinControllers replaces it by the confirm offset: no
// record the previous run had not dispatched (none above its confirm
// offset then) is dispatched before the broker knows its role.
func holdDispatch() int64 { return 0 }

// joinControllers runs before replication starts: it settles the broker's
// id and role with the controllers and sets b.opts.BrokerRole/BrokerID
// (and the store's read-only flag) to match.
func (b *Broker) joinControllers(ctx context.Context) error {
	o := &b.opts
	ep, err := epoch.Open(filepath.Join(o.Store.StorePathRootDir, epoch.FileName))
	if err != nil {
		return err
	}
	rc := remoting.NewClient(b.clientOptions())
	cm := &controllerMode{rc: rc, epochs: ep, cli: controllerclient.New(rc, o.ControllerAddrs()), masterRole: o.BrokerRole,
		wake: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(o.ControllerJoinTimeoutMills)*time.Millisecond)
	defer cancel()
	if err := b.settleRole(ctx, cm); err != nil {
		rc.Close()
		return fmt.Errorf("controller mode: %w", err)
	}
	b.ctl = cm
	if !o.ReadUnCommitted {
		b.store.SetDispatchLimit(func() int64 { return b.confirmOffset(cm) })
	}
	b.wg.Add(1)
	go b.controllerHeartbeats(cm)
	return nil
}

func (b *Broker) settleRole(ctx context.Context, cm *controllerMode) error {
	o := &b.opts
	idPath := filepath.Join(o.Store.StorePathRootDir, "config", "controllerIdentity.json")
	var ident controllerIdentity
	found, err := jsonfile.Load(idPath, &ident)
	if err != nil {
		return err
	}
	if !found {
		if ident, err = b.applyBrokerID(ctx, cm); err != nil {
			return err
		}
		if err := jsonfile.Save(idPath, ident); err != nil {
			return err
		}
	}
	cm.id = ident.BrokerID
	reg, _, err := cm.cli.RegisterBroker(ctx, &protocol.RegisterBrokerToControllerRequestHeader{ClusterName: o.BrokerClusterName,
		BrokerName: o.BrokerName, BrokerID: cm.id, BrokerAddress: b.addr, InvokeTime: clock.Now().UnixMilli()})
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	master := reg.MasterInfo
	if master.MasterBrokerID == protocol.NoBrokerID {
		eh, _, err := cm.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{ClusterName: o.BrokerClusterName,
			BrokerName: o.BrokerName, BrokerID: cm.id, InvokeTime: clock.Now().UnixMilli()})
		switch {
		case err == nil, errors.Is(err, &protocol.Error{Code: protocol.ControllerMasterStillExist}):
			master = eh.MasterInfo
		case errors.Is(err, &protocol.Error{Code: protocol.ControllerElectMasterFailed}),
			errors.Is(err, &protocol.Error{Code: protocol.ControllerMasterNotAvailable}):
			b.log.Warn("controller mode: the group has no master and this broker cannot be elected; starting as slave", "err", err)
		default:
			return fmt.Errorf("elect: %w", err)
		}
	}
	cm.master = master
	if master.MasterBrokerID == cm.id {
		if _, set, err := cm.cli.ReplicaInfo(ctx, o.BrokerName); err == nil {
			cm.setSyncStateSet(set) // else the role loop learns it; SYNC writes wait for it
		}
		return b.becomeMaster(cm, master)
	}
	cm.running = "slave"
	o.BrokerRole, o.BrokerID, o.HAMasterAddress = "SLAVE", cm.id, "" // the controller names the master
	b.store.SetReadOnly(true)
	b.log.Info("controller mode: slave", "id", cm.id, "master", master.MasterAddress, "master_epoch", master.MasterEpoch)
	return nil
}

// applyBrokerID takes the next free id; two brokers racing for it both
// retry with the next one.
func (b *Broker) applyBrokerID(ctx context.Context, cm *controllerMode) (controllerIdentity, error) {
	o := &b.opts
	code := b.addr + ";" + strconv.FormatInt(clock.Now().UnixMilli(), 10)
	for {
		next, err := cm.cli.NextBrokerID(ctx, o.BrokerClusterName, o.BrokerName)
		if err != nil {
			return controllerIdentity{}, fmt.Errorf("next broker id: %w", err)
		}
		err = cm.cli.ApplyBrokerID(ctx, o.BrokerClusterName, o.BrokerName, next, code)
		if err == nil {
			return controllerIdentity{BrokerID: next, RegisterCheckCode: code}, nil
		}
		if !errors.Is(err, &protocol.Error{Code: protocol.ControllerBrokerIDInvalid}) || ctx.Err() != nil {
			return controllerIdentity{}, fmt.Errorf("apply broker id %d: %w", next, err)
		}
	}
}

// becomeMaster runs the broker as its group's master (the configured
// master flavour, NameServer id 0) and records the epoch.
func (b *Broker) becomeMaster(cm *controllerMode, m protocol.MasterInfo) error {
	if err := cm.recordEpoch(m.MasterEpoch, b.store.MaxPhyOffset()); err != nil {
		return err
	}
	cm.running = "master"
	b.opts.BrokerID = 0
	b.log.Info("controller mode: master", "id", cm.id, "master_epoch", m.MasterEpoch, "role", b.opts.BrokerRole)
	return nil
}

// controllerHeartbeats sends BROKER_HEARTBEAT to every controller node
// until Shutdown, then closes the controller client.
func (b *Broker) controllerHeartbeats(cm *controllerMode) {
	defer b.wg.Done()
	defer cm.rc.Close()
	o := &b.opts
	every := time.Duration(o.BrokerHeartbeatInterval) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		last, _ := cm.epochs.Last()
		maxOff := b.store.MaxPhyOffset()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := cm.cli.Heartbeat(ctx, &protocol.BrokerHeartbeatRequestHeader{ClusterName: o.BrokerClusterName, BrokerAddr: b.addr,
			BrokerName: o.BrokerName, BrokerID: cm.id, Epoch: last.Epoch, MaxOffset: maxOff, ConfirmOffset: b.confirmOffset(cm),
			HeartbeatTimeoutMillis: int64(o.ControllerHeartBeatTimeoutMills)})
		cancel()
		if err != nil {
			b.log.Warn("controller heartbeat", "err", err)
		}
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
	}
}

// handleRoleChanged takes the controller's NOTIFY_BROKER_ROLE_CHANGED:
// the role loop (roleswitch.go) acts on it at once.
func (b *Broker) handleRoleChanged(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	cm := b.ctl
	if cm == nil {
		return protocol.NewResponse(req, protocol.RequestCodeNotSupported, "the broker is not in controller mode")
	}
	var h protocol.NotifyBrokerRoleChangedRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return protocol.NewResponse(req, protocol.ControllerInvalidRequest, err.Error())
	}
	b.log.Info("controller mode: role change notified", "master", h.MasterBrokerID, "addr", h.MasterAddress, "master_epoch", h.MasterEpoch)
	select {
	case cm.wake <- struct{}{}:
	default:
	}
	return protocol.NewResponse(req, protocol.Success, "")
}

// handleEpochCache serves GET_BROKER_EPOCH_CACHE: the epoch entries, the
// last one bounded by the max offset.
func (b *Broker) handleEpochCache(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	cm := b.ctl
	if cm == nil {
		return protocol.NewResponse(req, protocol.RequestCodeNotSupported, "the broker is not in controller mode")
	}
	maxOff := b.store.MaxPhyOffset()
	entries := cm.epochs.Entries()
	out := &protocol.EpochEntryCache{ClusterName: b.opts.BrokerClusterName, BrokerName: b.opts.BrokerName, BrokerID: cm.id,
		EpochList: make([]protocol.EpochEntry, 0, len(entries)), MaxOffset: maxOff}
	for i, e := range entries {
		end := e.EndOffset
		if i == len(entries)-1 {
			end = maxOff
		}
		out.EpochList = append(out.EpochList, protocol.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: end})
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = out.Encode()
	return resp
}

// registerControllerModeHandlers adds the codes a controller sends.
func (b *Broker) registerControllerModeHandlers() {
	b.server.HandleFunc(protocol.NotifyBrokerRoleChanged, b.instrument(b.handleRoleChanged))
	b.server.HandleFunc(protocol.GetBrokerEpochCache, b.instrument(b.handleEpochCache))
}

// ControllerAddrs returns the controller addresses of ControllerAddr.
func (o *Options) ControllerAddrs() []string {
	var out []string
	for _, s := range strings.Split(o.ControllerAddr, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (o *Options) controllerModeProblems() []string {
	if !o.EnableControllerMode {
		return nil
	}
	var errs []string
	if len(o.ControllerAddrs()) == 0 {
		errs = append(errs, "enableControllerMode needs controllerAddr")
	}
	for _, a := range o.ControllerAddrs() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Sprintf("controllerAddr entry %q is not host:port", a))
		}
	}
	if o.ControllerHeartBeatTimeoutMills <= 0 || o.BrokerHeartbeatInterval <= 0 || o.ControllerJoinTimeoutMills <= 0 ||
		o.HaMaxTimeSlaveNotCatchup <= 0 {
		errs = append(errs, "controllerHeartBeatTimeoutMills, brokerHeartbeatInterval, controllerJoinTimeoutMills and haMaxTimeSlaveNotCatchup must be positive")
	}
	if o.InSyncReplicas < 1 {
		errs = append(errs, fmt.Sprintf("inSyncReplicas %d must be at least 1 (the master)", o.InSyncReplicas))
	}
	return errs
}
