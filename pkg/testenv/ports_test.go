package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr's ports lie outside the kernel's ephemeral range, from which
// every listen on port 0 and every outgoing connection of any process
// takes its port (before, FreeAddr listened on port 0 itself, so every
// port it gave was in that range and could be taken before the test's
// server bound it), and they are free: the caller can bind them.
func TestFreeAddrOutsideEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	if lo <= 0 || hi < lo || hi > 65535 {
		t.Fatalf("ephemeral range %d-%d", lo, hi)
	}
	seen := map[int]bool{}
	for range 200 {
		addr := FreeAddr(t)
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("FreeAddr: %q %v", addr, err)
		}
		p, _ := strconv.Atoi(port)
		if (p >= lo && p <= hi) || p < lowestPort || p > 65535 {
			t.Fatalf("port %d: want %d-65535 outside the ephemeral range %d-%d", p, lowestPort, lo, hi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("bind %s: %v", addr, err)
		}
		l.Close()
	}
	if len(seen) < 150 {
		t.Errorf("%d distinct ports in 200 calls: the choice should be spread out", len(seen))
	}
}
