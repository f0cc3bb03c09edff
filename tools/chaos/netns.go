package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNoNetns reports that network namespaces cannot be used here (not
// root, or no ip/tc/iptables): the campaign cannot run.
var ErrNoNetns = errors.New("chaos: network namespaces unavailable")

// Network is a private network of hosts, each a network namespace with
// one interface (eth0) on a bridge. The bridge lives in a namespace of its
// own (chaos-<id>-sw), so the host's firewall (Docker's FORWARD DROP with
// br_netfilter) never sees the traffic; the tool itself, in the root
// namespace, reaches the hosts over one more veth (address .1).
//
//	root ns: chaos<id>c 10.21.<id>.1 ──┐
//	                                   │   chaos-<id>-sw: br0
//	chaos-<id>-<host>: eth0 10.21.<id>.(11+i) ──┘
//
// Faults: Cut drops packets with iptables inside the hosts' namespaces
// (one way or both), SlowLink limits a host's link with tc tbf on both ends
// and drops packets at random with iptables; Heal removes all of it. Nothing outside the namespaces and
// the one root veth is touched. Methods are not safe for concurrent use.
type Network struct {
	ID    int
	hosts map[string]string // host name -> address
	order []string
	lock  *os.File
}

// subnet returns 10.21.<id>.<n>.
func (n *Network) addr(i int) string { return fmt.Sprintf("10.21.%d.%d", n.ID, i) }

// ClientAddr is the tool's own address on the network.
func (n *Network) ClientAddr() string { return n.addr(1) }

func (n *Network) nsName(host string) string { return fmt.Sprintf("chaos-%d-%s", n.ID, host) }
func (n *Network) swName() string            { return fmt.Sprintf("chaos-%d-sw", n.ID) }
func (n *Network) rootLink() string          { return fmt.Sprintf("chaos%dc", n.ID) }

// CheckNetns returns nil if this process can build a Network, else an
// error wrapping ErrNoNetns that says why.
func CheckNetns() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (euid %d)", ErrNoNetns, os.Geteuid())
	}
	for _, t := range []string{"ip", "tc", "iptables"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%w: %s not found", ErrNoNetns, t)
		}
	}
	name := fmt.Sprintf("chaos-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: ip netns add: %v: %s", ErrNoNetns, err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	if out, err := exec.Command("ip", "netns", "exec", name, "iptables", "-L", "-n").CombinedOutput(); err != nil {
		return fmt.Errorf("%w: iptables in a namespace: %v: %s", ErrNoNetns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewNetwork claims a free network id (1..250, a lock file per id, so
// concurrent runs never share one; a stale network of a dead run is torn
// down first) and creates the switch and the tool's link.
func NewNetwork() (*Network, error) {
	if err := CheckNetns(); err != nil {
		return nil, err
	}
	for id := 1; id <= 250; id++ {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("chaos-net-%d.lock", id)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		n := &Network{ID: id, hosts: map[string]string{}, lock: f}
		n.teardown() // leftovers of a run that died
		if err := n.create(); err != nil {
			n.Close()
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: no free network id", ErrNoNetns)
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *Network) inNS(ns string, args ...string) error {
	return run(append([]string{"ip", "netns", "exec", ns}, args...)...)
}

func (n *Network) create() error {
	sw := n.swName()
	steps := [][]string{
		{"ip", "netns", "add", sw},
		{"ip", "-n", sw, "link", "set", "lo", "up"},
		{"ip", "-n", sw, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", sw, "link", "set", "br0", "up"},
		{"ip", "link", "add", n.rootLink(), "type", "veth", "peer", "name", "c", "netns", sw},
		{"ip", "-n", sw, "link", "set", "c", "master", "br0"},
		{"ip", "-n", sw, "link", "set", "c", "up"},
		{"ip", "addr", "add", n.addr(1) + "/24", "dev", n.rootLink()},
		{"ip", "link", "set", n.rootLink(), "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return err
		}
	}
	return nil
}

// AddHost creates host's namespace and link and returns its address.
func (n *Network) AddHost(host string) (string, error) {
	i := len(n.order)
	addr := n.addr(11 + i)
	ns, sw := n.nsName(host), n.swName()
	peer := fmt.Sprintf("h%d", i)
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", sw},
		{"ip", "-n", sw, "link", "set", peer, "master", "br0"},
		{"ip", "-n", sw, "link", "set", peer, "up"},
		{"ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return "", err
		}
	}
	n.hosts[host] = addr
	n.order = append(n.order, host)
	return addr, nil
}

// Hosts returns the hosts' names in the order they were added.
func (n *Network) Hosts() []string { return append([]string{}, n.order...) }

// Exec returns the command line that runs argv in host's namespace.
func (n *Network) Exec(host string, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.nsName(host)}, argv...)
}

// Addr returns host's address, or the tool's for "client".
func (n *Network) Addr(host string) string {
	if host == "client" {
		return n.ClientAddr()
	}
	return n.hosts[host]
}

// Cut drops the packets from host `from` to host `to` (one way). Either
// may be "client" (the tool); a cut from the client is installed in the
// other host's INPUT chain, so the root namespace is never touched.
func (n *Network) Cut(from, to string) error {
	if from != "client" {
		return n.inNS(n.nsName(from), "iptables", "-A", "OUTPUT", "-d", n.Addr(to), "-j", "DROP")
	}
	return n.inNS(n.nsName(to), "iptables", "-A", "INPUT", "-s", n.Addr(from), "-j", "DROP")
}

// SlowLink limits host's link to rateKbit in both directions (tbf, with
// a queue of latencyMS: packets wait, and are dropped when it is full)
// and drops lossPct % of the packets host sends and receives at random
// (iptables statistic). tc netem would be the usual tool; kernels without
// sch_netem (this workplace's) have tbf and xt_statistic.
func (n *Network) SlowLink(host string, rateKbit, latencyMS int, lossPct float64) error {
	tbf := []string{"tbf", "rate", fmt.Sprintf("%dkbit", rateKbit), "burst", "16kb", "latency", fmt.Sprintf("%dms", latencyMS)}
	ns := n.nsName(host)
	peer := fmt.Sprintf("h%d", n.index(host))
	steps := [][]string{
		append([]string{"tc", "qdisc", "replace", "dev", "eth0", "root"}, tbf...),
		append([]string{"ip", "netns", "exec", n.swName(), "tc", "qdisc", "replace", "dev", peer, "root"}, tbf...),
	}
	if lossPct > 0 {
		p := fmt.Sprintf("%.4f", lossPct/100)
		for _, chain := range []string{"INPUT", "OUTPUT"} {
			steps = append(steps, []string{"iptables", "-A", chain, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP"})
		}
	}
	for _, st := range steps {
		var err error
		if st[0] == "ip" {
			err = run(st...)
		} else {
			err = n.inNS(ns, st...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *Network) index(host string) int {
	for i, h := range n.order {
		if h == host {
			return i
		}
	}
	return -1
}

// Heal removes every cut, random drop and tbf qdisc. It tries all hosts and
// returns the errors joined.
func (n *Network) Heal() error {
	var errs []error
	for i, h := range n.order {
		if err := n.inNS(n.nsName(h), "iptables", "-F"); err != nil {
			errs = append(errs, err)
		}
		// deleting a qdisc that is not there fails: ignore that
		_ = n.inNS(n.nsName(h), "tc", "qdisc", "del", "dev", "eth0", "root")
		_ = n.inNS(n.swName(), "tc", "qdisc", "del", "dev", fmt.Sprintf("h%d", i), "root")
	}
	return errors.Join(errs...)
}

// mountsFile lists the file systems mounted for this network id (the
// brokers' stores), so that a later run can unmount what a dead run left.
func (n *Network) mountsFile() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("chaos-net-%d.mounts", n.ID))
}

// TrackMount records a mount point to unmount when the id is reclaimed
// after a run that died (Cluster.Stop unmounts them normally).
func (n *Network) TrackMount(dir string) error {
	f, err := os.OpenFile(n.mountsFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, dir)
	return err
}

// Close removes the namespaces and links and releases the id. Processes
// still running in the namespaces must have been stopped before.
func (n *Network) Close() error {
	n.teardown()
	if n.lock != nil {
		n.lock.Close()
	}
	return nil
}

// teardown unmounts the tracked stores and deletes every namespace of
// this id (by prefix: the host names of a dead run are unknown) and the
// root link.
func (n *Network) teardown() {
	if data, err := os.ReadFile(n.mountsFile()); err == nil {
		for _, dir := range strings.Fields(string(data)) {
			_ = exec.Command("umount", "-l", dir).Run() // fails if already unmounted
		}
		_ = os.Remove(n.mountsFile())
	}
	_ = exec.Command("ip", "link", "del", n.rootLink()).Run()
	prefix := fmt.Sprintf("chaos-%d-", n.ID)
	if cgs, err := filepath.Glob(filepath.Join(blkioRoot, prefix+"*")); err == nil {
		for _, cg := range cgs {
			_ = os.Remove(cg) // slow-disk cgroups; their processes are gone
		}
	}
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			_ = exec.Command("ip", "netns", "del", e.Name()).Run()
		}
	}
}
