package freeport

import (
	"net"
	"reflect"
	"strconv"
	"testing"
)

// Addr's ports lie in Range and outside the kernel's ephemeral range,
// from which every listen on port 0 and every outgoing connection of any
// process takes its port (before, testenv.FreeAddr listened on port 0
// itself, so every port it gave was in that range and could be taken
// before the test's server bound it), and they are free: the caller can
// bind them.
func TestAddrOutsideEphemeralRange(t *testing.T) {
	elo, ehi := EphemeralRange()
	if elo <= 0 || ehi < elo || ehi > 65535 {
		t.Fatalf("ephemeral range %d-%d", elo, ehi)
	}
	lo, hi := Range()
	n := 0
	for _, c := range outside(lo, hi, elo, ehi) {
		n += c[1] - c[0] + 1
	}
	seen := map[int]bool{}
	for range 200 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("Addr: %q %v", addr, err)
		}
		p, _ := strconv.Atoi(port)
		if (p >= elo && p <= ehi) || p < lo || p > hi {
			t.Fatalf("port %d: want %d-%d outside the ephemeral range %d-%d", p, lo, hi, elo, ehi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("bind %s: %v", addr, err)
		}
		l.Close()
	}
	if n >= 5000 && len(seen) < 150 {
		t.Errorf("%d distinct ports in 200 calls: the choice should be spread out", len(seen))
	}
}

func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, elo, ehi int
		want             [][2]int
	}{
		{Lowest, 65535, 32768, 60999, [][2]int{{Lowest, 32767}, {61000, 65535}}},
		{25000, 25499, 32768, 60999, [][2]int{{25000, 25499}}},
		{32700, 32800, 32768, 60999, [][2]int{{32700, 32767}}},
		{60990, 61010, 32768, 60999, [][2]int{{61000, 61010}}},
		{32768, 40000, 32768, 60999, nil},
		{Lowest, 65535, 1024, 65535, nil},
	} {
		if got := outside(tc.lo, tc.hi, tc.elo, tc.ehi); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("outside(%d-%d, %d-%d) = %v, want %v", tc.lo, tc.hi, tc.elo, tc.ehi, got, tc.want)
		}
	}
}

// TIDE_TEST_PORTS narrows the ports to its range; a range that is invalid
// is ignored, one inside the ephemeral range gives no port.
func TestPortRangeFromEnv(t *testing.T) {
	lo, _ := Range()
	elo, ehi := EphemeralRange()
	if lo+40 > elo {
		t.Skipf("ephemeral range %d-%d leaves no room above %d", elo, ehi, lo)
	}
	t.Setenv("TIDE_TEST_PORTS", strconv.Itoa(lo)+"-"+strconv.Itoa(lo+39))
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p > lo+39 {
			t.Fatalf("port %d: want %d-%d", p, lo, lo+39)
		}
	}
	for _, bad := range []string{"x", "30000", "300-200", "0-10", "1-70000"} {
		t.Setenv("TIDE_TEST_PORTS", bad)
		if lo, hi := Range(); lo != Lowest || hi != 65535 {
			t.Errorf("TIDE_TEST_PORTS=%q: range %d-%d, want the default", bad, lo, hi)
		}
	}
	t.Setenv("TIDE_TEST_PORTS", strconv.Itoa(elo)+"-"+strconv.Itoa(elo+10))
	if p, err := Port(); err == nil {
		t.Fatalf("a range inside the ephemeral one gave port %d", p)
	}
}
