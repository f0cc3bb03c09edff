// Package freeport gives tests ports for servers they start later, often
// in another process (MariaDB, Redis, a broker binary) or again after a
// stop on the same port (a restarted broker or controller, a proxy cut and
// restored). It imports only the standard library, so that every module's
// tests can use it (pkg/testenv's FreeAddr and FreePort are built on it).
//
// Its ports come from outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range). The kernel hands out ephemeral ports on
// its own, to every outgoing connection and every listen on port 0 of any
// process, so a port of that range that was free a moment ago can be some
// connection's local port by the time the server binds it ("bind: address
// already in use"; seen under load in services/inventory's flow test,
// where the order service, started with a port picked so, opened its
// database and broker connections before it listened). A port outside the
// range is only ever taken by an explicit bind.
//
// TIDE_TEST_PORTS ("lo-hi", e.g. "25000-25499") narrows the ports handed
// out to that range (less the ephemeral range), for a developer given a
// range of ports to use.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Lowest is the lowest port handed out by default: well above the fixed
// ports of the daemons (9876, 10911, 3306, 6379, ...).
const Lowest = 25000

// EphemeralRange returns the kernel's ephemeral port range, or Linux's
// default when it cannot be read.
func EphemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	return parseRange(strings.Join(strings.Fields(string(b)), "-"), lo, hi)
}

// parseRange parses "lo-hi" (1 <= lo <= hi <= 65535), or returns the
// defaults.
func parseRange(s string, dlo, dhi int) (lo, hi int) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	l, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || l < 1 || l > h || h > 65535 {
		return dlo, dhi
	}
	return l, h
}

// Range returns the ports handed out before the ephemeral range is taken
// out: Lowest-65535, or TIDE_TEST_PORTS when it is set and valid.
func Range() (lo, hi int) {
	return parseRange(os.Getenv("TIDE_TEST_PORTS"), Lowest, 65535)
}

// Port returns a port on 127.0.0.1 that is outside the ephemeral range
// and was free at the time of the call: a random candidate that a listen
// succeeded on (and was closed again). An explicit bind by another
// process before the caller's server binds stays possible, as with any
// port picked up front, but needs that process to pick the same port in
// that moment.
func Port() (int, error) {
	elo, ehi := EphemeralRange()
	lo, hi := Range()
	candidates := outside(lo, hi, elo, ehi)
	n := 0
	for _, c := range candidates {
		n += c[1] - c[0] + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("freeport: no port in %d-%d outside the ephemeral range %d-%d", lo, hi, elo, ehi)
	}
	var lastErr error
	for range 100 {
		i := rand.IntN(n)
		p := 0
		for _, c := range candidates {
			if size := c[1] - c[0] + 1; i < size {
				p = c[0] + i
				break
			} else {
				i -= size
			}
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			lastErr = err // in use: another candidate
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no free port in %d-%d outside the ephemeral range %d-%d in 100 tries: %w",
		lo, hi, elo, ehi, lastErr)
}

// outside returns the inclusive ranges of lo-hi outside elo-ehi.
func outside(lo, hi, elo, ehi int) [][2]int {
	var r [][2]int
	if lo < elo {
		r = append(r, [2]int{lo, min(hi, elo-1)})
	}
	if hi > ehi {
		r = append(r, [2]int{max(lo, ehi+1), hi})
	}
	return r
}

// Addr is Port as a 127.0.0.1 address.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}
