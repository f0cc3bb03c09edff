// Package controller is Tide's broker-group controller: RocketMQ 5's
// controller mode, a replicated service that decides, for every broker
// group (brokerName), which replica is master, under which epoch, and which
// replicas are in sync with it (the SyncStateSet). docs/controller.md is
// the operator's and broker author's reference.
//
// # Replication
//
// A group of 3 (or 5) nodes runs hashicorp/raft over TCP with raft-boltdb
// for the log and stable store and raft's file snapshot store. Every state
// change (a broker id applied, an address updated, a master elected, a
// SyncStateSet altered) is a command in the Raft log, applied by the FSM
// (fsm.go) on every node; snapshots are the JSON of the state. A command
// carries the epochs its proposer read, and the FSM refuses it when they
// changed in between, so a decision computed on a stale view never lands,
// even if two leaders' proposals were in flight across a leadership change.
//
// # Leader and followers
//
// Only the leader decides, and only after a barrier has applied every entry
// of earlier terms. Followers answer the leader-only codes
// CONTROLLER_NOT_LEADER with the leader's id and address in a
// GetMetaDataResponseHeader; pkg/remoting/controllerclient follows it.
// BROKER_HEARTBEAT and CONTROLLER_GET_METADATA_INFO are served by every
// node: brokers heartbeat every node, so each node knows who is alive and a
// new leader needs no replicated liveness. Liveness is deliberately not in
// the log (it would write the log on every heartbeat); a new leader gives
// every broker one heartbeat timeout of grace before it can find it dead,
// and so does a leader whose scan ran late by more than half a heartbeat
// timeout (it was stalled: heartbeats may wait unread in its sockets).
//
// # Elections
//
// The leader scans every ScanInterval: a group whose master has not
// heartbeated within the timeout gets a new master, chosen among the alive
// members of its SyncStateSet only (by heartbeat epoch, then max offset,
// then election priority, then id); the master epoch and the SyncStateSet
// epoch are bumped and the SyncStateSet restarts as the new master alone.
// With no alive in-sync replica the group is left without a master
// (the epoch is still bumped, fencing the dead master) unless
// EnableElectUncleanMaster, and is given one again as soon as an in-sync
// replica heartbeats. The brokers of the group are told with
// NOTIFY_BROKER_ROLE_CHANGED.
//
// Without a Raft quorum no leader exists, so no election or change happens
// at all; brokers keep the roles they have.
package controller
