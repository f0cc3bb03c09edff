package chaos

import (
	"fmt"
	"math/rand"
	"time"
)

// Fault kinds.
const (
	FKill            = "kill"             // SIGKILL, restart after Dur
	FPause           = "pause"            // SIGSTOP, SIGCONT after Dur
	FIsolate         = "isolate"          // the host cut from every other host and the clients, both ways
	FPartition       = "partition"        // two hosts cut from each other, both ways
	FOneWay          = "oneway"           // packets from Target to Peer dropped, the other way passes
	FSlowLink        = "slow-link"        // Target's link rate-limited (queueing delay) and lossy
	FConsumerRestart = "consumer-restart" // a consumer instance shut down, a new one started after Dur
	FDiskFull        = "disk-full"        // a broker's store file system filled to DiskFullPct
	// FBridge splits the hosts in two halves (Target's and Peer's, hosts
	// joined by "+") that cannot reach each other; the clients reach both,
	// the bridge between them (Jepsen's bridge partition).
	FBridge = "bridge"
	// FDiskFull100 fills a broker's store file system completely: writes
	// inside the store fail with ENOSPC, not only the broker's refusal
	// above diskSpaceWarningLevelRatio.
	FDiskFull100 = "disk-full-100"
	// FSlowDisk throttles a broker's writes to its store's block device
	// (blkio cgroup): fsyncs, so SYNC_FLUSH sends, wait.
	FSlowDisk = "slow-disk"
	// FOffsetReset is an operator resetting a clustering group's offsets
	// back in time (Target: the group): its consumers are stopped, every
	// queue's committed offset is reset to the first message stored at or
	// after a point BackSec seconds ago, and the consumers start again
	// when the fault ends. The group must get every message again from
	// there (duplicates), never lose one.
	FOffsetReset = "offset-reset"
)

// DiskFullPct is how full a disk-full fault makes a broker's store file
// system: above diskSpaceWarningLevelRatio (90), so writes are refused,
// below 100, where retention would delete messages to make room.
const DiskFullPct = 96

// FaultKinds are the kinds a schedule draws from; a third of the
// partitions drawn become bridges (a second random source decides, so
// adding bridges did not change the other faults of a seed).
var FaultKinds = []string{FKill, FPause, FIsolate, FPartition, FOneWay, FSlowLink, FConsumerRestart, FDiskFull}

// LaterFaultKinds were added after the campaigns of the first figures: a
// third random source replaces about a fifth of the faults drawn with
// one of them, so the other faults of a seed stay where they were.
var LaterFaultKinds = []string{FDiskFull100, FSlowDisk, FOffsetReset}

// offsetResetGroups are the groups an offset-reset fault may rewind (the
// Tide client's clustering groups: their instances can be stopped).
var offsetResetGroups = []string{GroupAll, GroupOrdered}

// Fault is one step of a schedule: at At (from the campaign's start) the
// fault begins; it is healed Dur later, then the cluster gets Gap of quiet.
type Fault struct {
	At     time.Duration
	Kind   string
	Target string
	Peer   string
	Dur    time.Duration
	Gap    time.Duration
	// slow-link: the link's rate (tbf, with LatencyMS of queue) and the
	// share of packets dropped at random
	RateKbit, LatencyMS int
	LossPct             float64
	// slow-disk: the write limits; offset-reset: how far back
	WriteKBps, WriteIOPS int
	BackSec              int
	// clock-jump: the step of the broker's wall clock, in seconds
	// (negative: back)
	SkewSec int
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s %s", f.Kind, f.Target)
	if f.Peer != "" {
		s += "->" + f.Peer
	}
	switch f.Kind {
	case FSlowLink:
		s += fmt.Sprintf(" rate=%dkbit latency=%dms loss=%.1f%%", f.RateKbit, f.LatencyMS, f.LossPct)
	case FSlowDisk:
		s += fmt.Sprintf(" write=%dKiB/s iops=%d", f.WriteKBps, f.WriteIOPS)
	case FOffsetReset:
		s += fmt.Sprintf(" back=%ds", f.BackSec)
	case FClockJump:
		s += skewString(f.SkewSec)
	}
	return s + fmt.Sprintf(" for %v", f.Dur)
}

// targets are the hosts faults choose from ("master" and "slave" are
// resolved to the brokers holding those roles when the fault starts).
type targets struct {
	process, host, broker, net []string
	bridges                    [][2]string
}

// targetsFor returns the targets of a cluster mode.
func targetsFor(mode string) targets {
	if mode == ModeController {
		return targets{
			process: []string{"master", "master", "master", "slave", "slave", "ns1", "ns2", "c1", "c2", "c3"},
			host:    []string{"master", "slave", "ns1", "ns2", "c1", "c2", "c3"},
			broker:  []string{"master", "slave"},
			net:     []string{"master", "slave", "ns1", "ns2", "c1", "c2", "c3", "client"},
			// the controllers' majority on the slave's side, then on the
			// master's: the clients still reach the old master
			bridges: [][2]string{{"master+ns1+c1", "slave+ns2+c2+c3"}, {"master+ns2+c1+c2", "slave+ns1+c3"}},
		}
	}
	return targets{
		process: []string{"master", "master", "master", "slave", "slave", "ns1", "ns2"},
		host:    []string{"master", "slave", "ns1", "ns2"},
		broker:  []string{"master", "slave"},
		net:     []string{"master", "slave", "ns1", "ns2", "client"},
		bridges: [][2]string{{"master+ns1", "slave+ns2"}, {"master+ns2", "slave+ns1"}},
	}
}

// Schedule derives the faults of a campaign of length d against a cluster
// of mode from seed: the same seed, duration and mode always give the same
// schedule. consumers names the consumer instances a consumer-restart may
// pick.
func Schedule(seed int64, d time.Duration, consumers []string, mode string) []Fault {
	tg := targetsFor(mode)
	processTargets, hostTargets, brokerTargets, netPeers := tg.process, tg.host, tg.broker, tg.net
	rng := rand.New(rand.NewSource(seed))
	alt := rand.New(rand.NewSource(seed ^ 0x627269646765)) // "bridge"
	later := rand.New(rand.NewSource(seed ^ 0x6c61746572)) // "later"
	var out []Fault
	at := 2 * time.Second
	for at < d {
		f := Fault{At: at, Kind: FaultKinds[rng.Intn(len(FaultKinds))],
			Dur: time.Duration(2000+rng.Intn(10000)) * time.Millisecond,
			Gap: time.Duration(2000+rng.Intn(4000)) * time.Millisecond}
		switch f.Kind {
		case FKill, FPause:
			f.Target = processTargets[rng.Intn(len(processTargets))]
		case FIsolate:
			f.Target = hostTargets[rng.Intn(len(hostTargets))]
		case FPartition, FOneWay:
			i := rng.Intn(len(netPeers))
			j := rng.Intn(len(netPeers) - 1)
			if j >= i {
				j++
			}
			f.Target, f.Peer = netPeers[i], netPeers[j]
			if f.Kind == FPartition && alt.Intn(3) == 0 {
				b := tg.bridges[alt.Intn(len(tg.bridges))]
				f.Kind, f.Target, f.Peer = FBridge, b[0], b[1]
			}
		case FSlowLink:
			f.Target = hostTargets[rng.Intn(len(hostTargets))]
			f.RateKbit = 200 + 10*rng.Intn(200)
			f.LatencyMS = 50 + rng.Intn(100)
			f.LossPct = float64(rng.Intn(300)) / 10
		case FConsumerRestart:
			f.Target = consumers[rng.Intn(len(consumers))]
		case FDiskFull:
			f.Target = brokerTargets[rng.Intn(len(brokerTargets))]
		}
		if later.Intn(5) == 0 {
			f.Peer, f.RateKbit, f.LatencyMS, f.LossPct = "", 0, 0, 0
			f.Kind = LaterFaultKinds[later.Intn(len(LaterFaultKinds))]
			switch f.Kind {
			case FDiskFull100:
				f.Target = brokerTargets[later.Intn(len(brokerTargets))]
			case FSlowDisk:
				f.Target = brokerTargets[later.Intn(len(brokerTargets))]
				f.WriteKBps, f.WriteIOPS = 64+64*later.Intn(32), 10+10*later.Intn(20)
			case FOffsetReset:
				f.Target = offsetResetGroups[later.Intn(len(offsetResetGroups))]
				f.BackSec = 5 + later.Intn(56)
			}
		}
		out = append(out, f)
		at += f.Dur + f.Gap
	}
	clockJumps(seed, out, brokerTargets)
	return out
}
