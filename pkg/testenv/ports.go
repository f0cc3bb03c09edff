package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports for servers that a test starts later, often in another process
// (MariaDB, Redis, a service binary), come from outside the kernel's
// ephemeral range (net.ipv4.ip_local_port_range). The kernel hands out
// ephemeral ports on its own, to every outgoing connection and every
// listen on port 0 of any process, so a port of that range that was free
// a moment ago can be some connection's local port by the time the
// server binds it ("bind: address already in use"; seen under load in
// services/inventory's flow test, where the order service, started
// with a port picked so, opened its database and broker connections
// before it listened). A port outside the range is only ever taken by
// an explicit bind.

// lowestPort is the lowest port handed out: well above the fixed ports
// of the daemons (9876, 10911, 3306, 6379, ...) and of the ranges the
// project's developers are given for servers they start by hand.
const lowestPort = 25000

// ephemeralRange returns the kernel's ephemeral port range, or Linux's
// default when it cannot be read.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return lo, hi
	}
	return l, h
}

// freePort returns a port on 127.0.0.1 that is outside the ephemeral
// range and was free at the time of the call: a random candidate that a
// listen succeeded on (and was closed again). An explicit bind by
// another process before the caller's server binds stays possible, as
// with any port picked up front, but needs that process to pick the
// same port in that moment.
func freePort() (int, error) {
	lo, hi := ephemeralRange()
	var candidates [][2]int // inclusive ranges
	if lo > lowestPort {
		candidates = append(candidates, [2]int{lowestPort, lo - 1})
	}
	if hi < 65535 {
		candidates = append(candidates, [2]int{max(hi+1, lowestPort), 65535})
	}
	n := 0
	for _, c := range candidates {
		n += c[1] - c[0] + 1
	}
	if n == 0 {
		return 0, fmt.Errorf("testenv: no port outside the ephemeral range %d-%d", lo, hi)
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
	return 0, fmt.Errorf("testenv: no free port outside the ephemeral range %d-%d in 100 tries: %w", lo, hi, lastErr)
}
