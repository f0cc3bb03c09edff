// Package controllerclient is the typed client of Tide's controller (RocketMQ
// 5's controller mode, see docs/controller.md), for brokers, tools and tests.
// It lives next to the transport so that the broker, which may depend only
// on pkg/remoting, can use it.
//
// Requests that only the controller leader serves go to the leader the
// client last saw; a follower's CONTROLLER_NOT_LEADER names the leader and
// the client retries there, and while no leader is known (an election in
// progress) it retries the controller addresses with a short backoff until
// the call's context ends. Retrying is safe: every state change the
// controller makes is checked against the epochs it was computed from,
// applying a broker id twice with the same check code is a no-op, and an
// ALTER_SYNC_STATE_SET that committed before its answer was lost (the
// leader stepped down) is answered, when sent again, with the set it made.
//
// A non-SUCCESS response is returned as a *protocol.Error (test it with
// errors.Is(err, &protocol.Error{Code: protocol.ControllerFencedMasterEpoch})),
// along with whatever typed header the response carried.
package controllerclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// ErrNoController: no controller address answered before the context ended.
var ErrNoController = errors.New("controllerclient: no controller leader reachable")

// Client talks to one controller group. Safe for concurrent use.
type Client struct {
	rc      *remoting.Client
	addrs   []string
	timeout time.Duration

	mu     sync.Mutex
	leader string
}

// DefaultCallTimeout bounds one request to one controller node.
const DefaultCallTimeout = 3 * time.Second

// New returns a client of the controllers at addrs using the transport rc
// (which the caller owns and closes).
func New(rc *remoting.Client, addrs []string) *Client {
	return &Client{rc: rc, addrs: append([]string{}, addrs...), timeout: DefaultCallTimeout}
}

// Addrs returns the controller addresses.
func (c *Client) Addrs() []string { return append([]string{}, c.addrs...) }

// Leader returns the leader address the client last used ("" if none).
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// invokeLeader sends req to the leader, following CONTROLLER_NOT_LEADER
// answers, until a leader answers or ctx ends. The returned response may
// carry any code but CONTROLLER_NOT_LEADER.
func (c *Client) invokeLeader(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	backoff := 20 * time.Millisecond
	var last error
	for {
		for _, addr := range c.candidates() {
			resp, err := c.rc.InvokeTimeout(ctx, addr, req, c.timeout)
			if err != nil {
				last = err
				c.forget(addr)
				continue
			}
			if resp.Code != protocol.ControllerNotLeader {
				c.setLeader(addr)
				return resp, nil
			}
			last = resp.Err()
			var m protocol.GetMetaDataResponseHeader
			if m.Decode(resp.ExtFields) == nil && m.ControllerLeaderAddress != "" && m.ControllerLeaderAddress != addr {
				if resp, err := c.rc.InvokeTimeout(ctx, m.ControllerLeaderAddress, req, c.timeout); err == nil &&
					resp.Code != protocol.ControllerNotLeader {
					c.setLeader(m.ControllerLeaderAddress)
					return resp, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v): %w", ErrNoController, last, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// candidates is the cached leader first, then every address.
func (c *Client) candidates() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.addrs)+1)
	if c.leader != "" {
		out = append(out, c.leader)
	}
	for _, a := range c.addrs {
		if a != c.leader {
			out = append(out, a)
		}
	}
	return out
}

func (c *Client) setLeader(addr string) {
	c.mu.Lock()
	c.leader = addr
	c.mu.Unlock()
}

func (c *Client) forget(addr string) {
	c.mu.Lock()
	if c.leader == addr {
		c.leader = ""
	}
	c.mu.Unlock()
}

// call sends a leader request and decodes the response header into out
// (if not nil); it returns resp.Err() for a non-SUCCESS code.
func (c *Client) call(ctx context.Context, code int16, h protocol.Header, body []byte, out protocol.Header) (*protocol.Command, error) {
	var ext map[string]string
	if h != nil {
		ext = h.Encode()
	}
	resp, err := c.invokeLeader(ctx, protocol.NewRequest(code, ext, body))
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := out.Decode(resp.ExtFields); err != nil {
			return resp, fmt.Errorf("controllerclient: response header of code %d: %w", code, err)
		}
	}
	return resp, resp.Err()
}

// Metadata asks one controller node (any, not only the leader) for the
// group's metadata.
func (c *Client) Metadata(ctx context.Context, addr string) (*protocol.GetMetaDataResponseHeader, error) {
	resp, err := c.rc.InvokeTimeout(ctx, addr, protocol.NewRequest(protocol.ControllerGetMetadataInfo, nil, nil), c.timeout)
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	var m protocol.GetMetaDataResponseHeader
	if err := m.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	return &m, nil
}

// NextBrokerID asks which id a new broker of the group should apply for.
func (c *Client) NextBrokerID(ctx context.Context, cluster, brokerName string) (int64, error) {
	var out protocol.GetNextBrokerIDResponseHeader
	_, err := c.call(ctx, protocol.ControllerGetNextBrokerID,
		&protocol.GetNextBrokerIDRequestHeader{ClusterName: cluster, BrokerName: brokerName}, nil, &out)
	return out.NextBrokerID, err
}

// ApplyBrokerID claims an id in a group; checkCode is "address;timestamp"
// and must be the same when the broker applies again after a restart.
func (c *Client) ApplyBrokerID(ctx context.Context, cluster, brokerName string, id int64, checkCode string) error {
	_, err := c.call(ctx, protocol.ControllerApplyBrokerID, &protocol.ApplyBrokerIDRequestHeader{ClusterName: cluster,
		BrokerName: brokerName, AppliedBrokerID: id, RegisterCheckCode: checkCode}, nil, nil)
	return err
}

// RegisterBroker reports a broker's address and returns the group's alive
// master (MasterBrokerID is NoBrokerID without one) and SyncStateSet.
func (c *Client) RegisterBroker(ctx context.Context, h *protocol.RegisterBrokerToControllerRequestHeader) (
	*protocol.RegisterBrokerToControllerResponseHeader, *protocol.SyncStateSet, error) {
	var out protocol.RegisterBrokerToControllerResponseHeader
	resp, err := c.call(ctx, protocol.ControllerRegisterBroker, h, nil, &out)
	if err != nil {
		return &out, nil, err
	}
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	return &out, set, err
}

// ElectMaster asks for an election. The header is returned with
// CONTROLLER_MASTER_STILL_EXIST too (it names the current master).
func (c *Client) ElectMaster(ctx context.Context, h *protocol.ElectMasterRequestHeader) (
	*protocol.ElectMasterResponseHeader, *protocol.ElectMasterResponseBody, error) {
	out := protocol.ElectMasterResponseHeader{MasterInfo: protocol.MasterInfo{MasterBrokerID: protocol.NoBrokerID}}
	resp, err := c.call(ctx, protocol.ControllerElectMaster, h, nil, &out)
	if resp == nil || len(resp.Body) == 0 {
		return &out, nil, err
	}
	body, derr := protocol.DecodeElectMasterResponseBody(resp.Body)
	if err == nil {
		err = derr
	}
	return &out, body, err
}

// AlterSyncStateSet proposes a new SyncStateSet as the master of
// masterEpoch; set.SyncStateSetEpoch must be the epoch it was computed
// from. It returns the committed set with its new epoch.
func (c *Client) AlterSyncStateSet(ctx context.Context, brokerName string, masterID int64, masterEpoch int32,
	set *protocol.SyncStateSet) (*protocol.SyncStateSet, error) {
	resp, err := c.call(ctx, protocol.ControllerAlterSyncStateSet, &protocol.AlterSyncStateSetRequestHeader{
		BrokerName: brokerName, MasterBrokerID: masterID, MasterEpoch: masterEpoch, InvokeTime: time.Now().UnixMilli()},
		set.Encode(), nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeSyncStateSet(resp.Body)
}

// ReplicaInfo returns a group's master and SyncStateSet.
func (c *Client) ReplicaInfo(ctx context.Context, brokerName string) (*protocol.GetReplicaInfoResponseHeader, *protocol.SyncStateSet, error) {
	var out protocol.GetReplicaInfoResponseHeader
	resp, err := c.call(ctx, protocol.ControllerGetReplicaInfo, &protocol.GetReplicaInfoRequestHeader{BrokerName: brokerName}, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	return &out, set, err
}

// SyncStateData returns the replicas of the named groups, split by
// membership of the SyncStateSet, with their liveness.
func (c *Client) SyncStateData(ctx context.Context, brokerNames []string) (*protocol.BrokerReplicasInfo, error) {
	resp, err := c.call(ctx, protocol.ControllerGetSyncStateData, nil, protocol.EncodeBrokerNames(brokerNames), nil)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeBrokerReplicasInfo(resp.Body)
}

// Heartbeat sends BROKER_HEARTBEAT to every controller node (each keeps
// its own view of liveness, so a new leader knows who is alive). It fails
// only if no node took it.
func (c *Client) Heartbeat(ctx context.Context, h *protocol.BrokerHeartbeatRequestHeader) error {
	errs := make([]error, len(c.addrs))
	var wg sync.WaitGroup
	for i, addr := range c.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.rc.InvokeTimeout(ctx, addr, protocol.NewRequest(protocol.BrokerHeartbeat, h.Encode(), nil), c.timeout)
			if err == nil {
				err = resp.Err()
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", addr, err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			return nil
		}
	}
	return errors.Join(errs...)
}

// ElectionHistory returns the controller's replicated history of master
// elections of brokerName (every group's when empty), oldest first: the
// last protocol.MaxElectionHistory per group. It asks the leader (any
// node serves it, from the state it has applied; the leader's is the
// newest).
func (c *Client) ElectionHistory(ctx context.Context, brokerName string) ([]protocol.Election, error) {
	resp, err := c.call(ctx, protocol.TideGetElectionHistory, &protocol.GetElectionHistoryRequestHeader{BrokerName: brokerName}, nil, nil)
	if err != nil {
		return nil, err
	}
	h, err := protocol.DecodeElectionHistory(resp.Body)
	if err != nil {
		return nil, err
	}
	return h.Elections, nil
}

// ElectionHistoryAt is ElectionHistory asked of one node (addr), leader
// or not: what that node has applied, for when no leader is reachable.
func (c *Client) ElectionHistoryAt(ctx context.Context, addr, brokerName string) ([]protocol.Election, error) {
	h := protocol.GetElectionHistoryRequestHeader{BrokerName: brokerName}
	resp, err := c.rc.InvokeTimeout(ctx, addr, protocol.NewRequest(protocol.TideGetElectionHistory, h.Encode(), nil), c.timeout)
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	eh, err := protocol.DecodeElectionHistory(resp.Body)
	if err != nil {
		return nil, err
	}
	return eh.Elections, nil
}
