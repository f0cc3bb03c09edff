// Package mqtest checks, from a service's tests, that the service process
// runs all its messaging on one mqclient.Client (kit/mq.NewClient).
package mqtest

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// OneClient fails t unless the process runs as one RocketMQ client, as the
// NameServer nameServer and its brokers see it, once the consumer groups
// groups are online: each group has exactly one member on every master
// and the members of all groups have one client id and reach each broker
// over one connection; and the process holds exactly one TCP connection
// to each master (a private client per producer, consumer or admin opens
// its own). The process's connections are counted before the check's own
// admin client connects. Connections to the NameServer are not counted: a
// broker run inside the test process (brokertest) holds its own. It waits up to
// 30 s for the groups to come online.
func OneClient(t testing.TB, nameServer string, groups ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := Conns()
	if err != nil {
		t.Fatal(err)
	}
	a, err := mqclient.NewAdmin(mqclient.WithNameServers(nameServer))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var masters []string
	for _, b := range ci.BrokerAddrTable {
		if addr, ok := b.BrokerAddrs[0]; ok {
			masters = append(masters, addr)
		}
	}
	if len(masters) == 0 {
		t.Fatal("mqtest: no master registered")
	}
	ids := map[string]bool{}
	for _, addr := range masters {
		conns := map[string]bool{} // the members' addresses as this broker sees them
		for _, g := range groups {
			for _, c := range members(ctx, t, a, addr, g) {
				ids[c.ClientID] = true
				conns[c.ClientAddr] = true
			}
		}
		if len(conns) > 1 {
			t.Errorf("mqtest: groups %v reach %s over %d connections %v, want one", groups, addr, len(conns), keys(conns))
		}
	}
	if len(ids) != 1 {
		t.Errorf("mqtest: groups %v have client ids %v, want one", groups, keys(ids))
	}
	for _, addr := range masters {
		if n := before[addr]; n != 1 {
			t.Errorf("mqtest: the process held %d connections to %s, want 1 (all: %v)", n, addr, before)
		}
	}
}

// members returns group's members on the broker at addr once it has one;
// more than one fails t.
func members(ctx context.Context, t testing.TB, a *mqclient.Admin, addr, group string) []struct{ ClientID, ClientAddr string } {
	t.Helper()
	for {
		cc, err := a.ConsumerConnections(ctx, addr, group)
		if err == nil && cc != nil && len(cc.ConnectionSet) > 0 {
			if len(cc.ConnectionSet) != 1 {
				t.Errorf("mqtest: group %s has %d members on %s, want 1: %+v", group, len(cc.ConnectionSet), addr, cc.ConnectionSet)
			}
			out := make([]struct{ ClientID, ClientAddr string }, 0, len(cc.ConnectionSet))
			for _, c := range cc.ConnectionSet {
				out = append(out, struct{ ClientID, ClientAddr string }{c.ClientID, c.ClientAddr})
			}
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mqtest: group %s not online on %s: %v", group, addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Conns returns the number of established IPv4 TCP connections this
// process holds, by remote address ("ip:port"), from /proc (Linux only).
func Conns() (map[string]int, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("mqtest: %w", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	f, err := os.Open("/proc/self/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("mqtest: %w", err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "01" || !inodes[fs[9]] { // 01: ESTABLISHED
			continue
		}
		if addr, err := hexAddr(fs[2]); err == nil {
			out[addr]++
		}
	}
	return out, sc.Err()
}

// hexAddr decodes /proc/net/tcp's "0100007F:1F90" (little-endian IPv4,
// big-endian port) into "127.0.0.1:8080".
func hexAddr(s string) (string, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	b, err := hex.DecodeString(ipHex)
	if !ok || err != nil || len(b) != 4 {
		return "", fmt.Errorf("mqtest: address %q", s)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(net.IPv4(b[3], b[2], b[1], b[0]).String(), strconv.Itoa(int(port))), nil
}
