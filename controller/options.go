package controller

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
)

// Defaults, in one place.
const (
	DefaultListenAddr        = "0.0.0.0:9878"
	DefaultGroup             = "tide-controller"
	DefaultHeartbeatTimeout  = 10 * time.Second // RocketMQ controllerHeartBeatTimeoutMills
	DefaultScanInterval      = 5 * time.Second  // RocketMQ scanNotActiveBrokerInterval
	DefaultRaftHeartbeat     = time.Second
	DefaultRaftElection      = time.Second
	DefaultApplyTimeout      = 5 * time.Second
	DefaultNotifyTimeout     = 3 * time.Second
	DefaultSnapshotThreshold = 1024
)

// ErrInvalidOptions wraps every Validate error.
var ErrInvalidOptions = errors.New("controller: invalid options")

// ErrNotLeader is returned by the methods that need the Raft leader.
var ErrNotLeader = errors.New("controller: not the leader")

// Peer is one controller node: its Raft id, the address its Raft transport
// listens on, and the address its remoting (RocketMQ protocol) port
// listens on. Every node is configured with the same peer list.
type Peer struct {
	ID       string
	RaftAddr string
	Addr     string
}

// Options configures a controller node. Start from DefaultOptions.
type Options struct {
	// Group names the controller group (RocketMQ controllerDLegerGroup);
	// CONTROLLER_GET_METADATA_INFO reports it.
	Group string
	// NodeID is this node's id; it must be one of Peers.
	NodeID string
	// Peers are all nodes of the group, this one included (3 or 5 in
	// production; 1 works but has no failover of its own).
	Peers []Peer
	// ListenAddr is where the remoting port listens (port 0 picks one,
	// see Controller.Addr). Ignored when Listener is set.
	ListenAddr string
	// Listener, if set, is the remoting listener to use (tests open all
	// listeners first so that the peer list holds real addresses).
	Listener net.Listener
	// RaftListener, if set, is the listener of the Raft transport;
	// otherwise the node listens on its peer's RaftAddr.
	RaftListener net.Listener
	// DataDir holds the Raft log, its stable store and the snapshots
	// (RocketMQ controllerStorePath). Required.
	DataDir string
	// HeartbeatTimeout: a broker whose last BROKER_HEARTBEAT is older is
	// dead (a heartbeat's own heartbeatTimeoutMills overrides it).
	HeartbeatTimeout time.Duration
	// ScanInterval is the period of the leader's scan for dead masters.
	ScanInterval time.Duration
	// EnableElectUncleanMaster lets an election pick an alive replica
	// outside the SyncStateSet when no in-sync replica is alive. It may
	// lose acknowledged messages; off by default, as in RocketMQ.
	EnableElectUncleanMaster bool
	// NotifyBrokerRoleChanged makes the leader send
	// NOTIFY_BROKER_ROLE_CHANGED to a group's brokers after an election
	// (RocketMQ notifyBrokerRoleChanged, on by default).
	NotifyBrokerRoleChanged bool
	// RaftHeartbeatTimeout and RaftElectionTimeout tune hashicorp/raft
	// (its HeartbeatTimeout and ElectionTimeout; the leader lease is half
	// the heartbeat timeout).
	RaftHeartbeatTimeout time.Duration
	RaftElectionTimeout  time.Duration
	// SnapshotThreshold is the number of log entries after which Raft
	// takes a snapshot of the state and compacts the log.
	SnapshotThreshold uint64
	// ApplyTimeout bounds one proposal through the Raft log.
	ApplyTimeout time.Duration
	// TLSConfig is the remoting port's TLS configuration: its
	// certificate and, for mutual TLS (the port's way to authenticate
	// brokers and tools: RocketMQ has no ACL on the controller), the
	// client CAs it requires.
	TLSConfig *tls.Config
	// TLSMode is RocketMQ's tls.server.mode for the remoting port:
	// disabled (plain only), permissive (plain and TLS on the port) or
	// enforcing (TLS only). Zero: enforcing with a TLSConfig, else
	// permissive, as the NameServer and the broker. Permissive without a
	// TLSConfig serves TLS clients a self-signed certificate made at
	// Start; enforcing needs a TLSConfig.
	TLSMode remoting.TLSMode
	// BrokerCredentials, if AccessKey is set, sign the node's requests to
	// brokers (NOTIFY_BROKER_ROLE_CHANGED) as RocketMQ's plain ACL
	// expects, so a broker with aclEnable takes them from an admin account
	// instead of refusing them (it then learns a new master only from its
	// own polling). Give the brokers' innerClientAuthenticationCredentials
	// account, or any admin account of their plain_acl.yml.
	BrokerCredentials Credentials
	// ClientTLSConfig, if set, makes the node's outgoing remoting
	// connections (NOTIFY_BROKER_ROLE_CHANGED to brokers) speak TLS.
	ClientTLSConfig *tls.Config
	// MetricsListenAddr, when set, serves Prometheus /metrics and /healthz.
	MetricsListenAddr string
	// Logger receives the node's events; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of broker liveness; nil means time.Now.
	Now func() time.Time
}

// Credentials are a plain-ACL account: the accessKey/secretKey pair of
// plain_acl.yml.
type Credentials struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// DefaultOptions returns the defaults (RocketMQ's where it has them).
func DefaultOptions() Options {
	return Options{
		Group:                   DefaultGroup,
		ListenAddr:              DefaultListenAddr,
		HeartbeatTimeout:        DefaultHeartbeatTimeout,
		ScanInterval:            DefaultScanInterval,
		NotifyBrokerRoleChanged: true,
		RaftHeartbeatTimeout:    DefaultRaftHeartbeat,
		RaftElectionTimeout:     DefaultRaftElection,
		SnapshotThreshold:       DefaultSnapshotThreshold,
		ApplyTimeout:            DefaultApplyTimeout,
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.NodeID == "":
		return bad("node id is empty")
	case len(o.Peers) == 0:
		return bad("no peers")
	case o.DataDir == "":
		return bad("data dir is empty")
	case o.HeartbeatTimeout <= 0, o.ScanInterval <= 0, o.ApplyTimeout <= 0:
		return bad("heartbeat timeout, scan interval and apply timeout must be positive")
	case o.RaftHeartbeatTimeout < 5*time.Millisecond, o.RaftElectionTimeout < 5*time.Millisecond:
		return bad("raft timeouts must be at least 5ms")
	case o.Listener == nil && o.ListenAddr == "":
		return bad("listen address is empty")
	case o.TLSMode != "" && o.TLSMode != remoting.TLSDisabled && o.TLSMode != remoting.TLSPermissive && o.TLSMode != remoting.TLSEnforcing:
		return bad("TLS mode %q: want disabled, permissive or enforcing", o.TLSMode)
	case o.TLSMode == remoting.TLSEnforcing && o.TLSConfig == nil:
		return bad("TLS mode enforcing needs a certificate (TLSConfig)")
	case (o.BrokerCredentials.AccessKey == "") != (o.BrokerCredentials.SecretKey == ""):
		return bad("broker credentials need both an access key and a secret key")
	}
	ids, raftAddrs := map[string]bool{}, map[string]bool{}
	self := false
	for _, p := range o.Peers {
		if p.ID == "" || p.RaftAddr == "" || p.Addr == "" {
			return bad("peer %+v needs an id, a raft address and an address", p)
		}
		if _, _, err := net.SplitHostPort(p.RaftAddr); err != nil {
			return bad("peer %s raft address %q: %v", p.ID, p.RaftAddr, err)
		}
		if ids[p.ID] || raftAddrs[p.RaftAddr] {
			return bad("peer %s or raft address %s listed twice", p.ID, p.RaftAddr)
		}
		ids[p.ID], raftAddrs[p.RaftAddr] = true, true
		self = self || p.ID == o.NodeID
	}
	if !self {
		return bad("node id %q is not among the peers", o.NodeID)
	}
	return nil
}

// tlsMode is the mode the remoting port runs (see Options.TLSMode).
func (o Options) tlsMode() remoting.TLSMode {
	switch {
	case o.TLSMode != "":
		return o.TLSMode
	case o.TLSConfig != nil:
		return remoting.TLSEnforcing
	}
	return remoting.TLSPermissive
}

func (o Options) self() Peer {
	for _, p := range o.Peers {
		if p.ID == o.NodeID {
			return p
		}
	}
	return Peer{}
}

func (o Options) peerByID(id string) (Peer, bool) {
	for _, p := range o.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}
