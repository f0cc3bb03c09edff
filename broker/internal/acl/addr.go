package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// addrPattern matches client IP addresses. The forms are RocketMQ's:
//
//   - or  *.*.*.*          every address
//     192.168.0.1             one address (IPv6 literals too)
//     192.168.0.{1,2,10}      a list in the last octet
//     192.168.*  192.168.1.*  trailing wildcards
//     192.168.1.10-20         a range in one octet (with wildcards after it)
//
// and, as a Tide extension, CIDR prefixes (10.0.0.0/8, fd00::/8).
type addrPattern struct {
	src    string
	all    bool
	prefix netip.Prefix // CIDR or exact address when valid
	octets [4]octetRange
	ranged bool // octets is used
}

type octetRange struct {
	lo, hi int
	set    map[int]bool // {a,b,c} lists
}

func (r octetRange) match(v int) bool {
	if r.set != nil {
		return r.set[v]
	}
	return v >= r.lo && v <= r.hi
}

// parseAddrPattern parses one whitelist entry. The empty string is an
// error: callers skip empty entries themselves.
func parseAddrPattern(s string) (addrPattern, error) {
	s = strings.TrimSpace(s)
	p := addrPattern{src: s}
	switch {
	case s == "":
		return p, fmt.Errorf("empty address pattern")
	case s == "*" || s == "*.*.*.*":
		p.all = true
		return p, nil
	case strings.Contains(s, "/"):
		pre, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("address pattern %q: %w", s, err)
		}
		p.prefix = pre.Masked()
		return p, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		p.prefix = netip.PrefixFrom(a, a.BitLen())
		return p, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return p, fmt.Errorf("address pattern %q: more than 4 octets", s)
	}
	p.ranged = true
	wild := false
	for i := 0; i < 4; i++ {
		if i >= len(parts) {
			if !wild {
				return p, fmt.Errorf("address pattern %q: fewer than 4 octets without a trailing *", s)
			}
			p.octets[i] = octetRange{0, 255, nil}
			continue
		}
		r, isWild, err := parseOctet(parts[i], i == len(parts)-1)
		if err != nil {
			return p, fmt.Errorf("address pattern %q: %w", s, err)
		}
		if wild && !isWild {
			return p, fmt.Errorf("address pattern %q: a fixed octet after a wildcard", s)
		}
		wild = wild || isWild
		p.octets[i] = r
	}
	return p, nil
}

func parseOctet(s string, last bool) (octetRange, bool, error) {
	num := func(t string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 0 || n > 255 {
			return 0, fmt.Errorf("bad octet %q", t)
		}
		return n, nil
	}
	switch {
	case s == "*":
		return octetRange{0, 255, nil}, true, nil
	case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
		if !last {
			return octetRange{}, false, fmt.Errorf("a {list} is only allowed in the last octet")
		}
		set := map[int]bool{}
		for _, t := range strings.Split(s[1:len(s)-1], ",") {
			n, err := num(t)
			if err != nil {
				return octetRange{}, false, err
			}
			set[n] = true
		}
		return octetRange{set: set}, true, nil
	case strings.Contains(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		a, err := num(lo)
		if err != nil {
			return octetRange{}, false, err
		}
		b, err := num(hi)
		if err != nil {
			return octetRange{}, false, err
		}
		if a > b {
			return octetRange{}, false, fmt.Errorf("empty range %q", s)
		}
		return octetRange{a, b, nil}, true, nil
	}
	n, err := num(s)
	return octetRange{n, n, nil}, false, err
}

// match reports whether ip matches the pattern. An invalid ip matches
// nothing but "*".
func (p addrPattern) match(ip netip.Addr) bool {
	if p.all {
		return true
	}
	if !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	if p.prefix.IsValid() {
		return p.prefix.Contains(ip)
	}
	if !p.ranged || !ip.Is4() {
		return false
	}
	b := ip.As4()
	for i, r := range p.octets {
		if !r.match(int(b[i])) {
			return false
		}
	}
	return true
}
