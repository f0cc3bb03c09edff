package protocol

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// OffsetMsgID renders the broker-generated message id: store host address,
// store port (int32) and commit log offset (int64), upper-case hex. That is
// 32 characters for an IPv4 host (the only form rocketmq-client-go v2.1.2
// parses) and 56 for IPv6.
//
//	+-----------------+-----------+----------------------+
//	| host addr (4|16)| port (4)  | commit log offset (8)|
//	+-----------------+-----------+----------------------+
func OffsetMsgID(storeHost netip.AddrPort, commitLogOffset int64) string {
	var b [28]byte
	n := 0
	a := storeHost.Addr()
	if a.Is4() || a.Is4In6() || !a.IsValid() {
		var v4 [4]byte
		if a.IsValid() {
			v4 = a.Unmap().As4()
		}
		n += copy(b[:], v4[:])
	} else {
		v6 := a.As16()
		n += copy(b[:], v6[:])
	}
	binary.BigEndian.PutUint32(b[n:], uint32(storeHost.Port()))
	n += 4
	binary.BigEndian.PutUint64(b[n:], uint64(commitLogOffset))
	n += 8
	// Upper-case hex in one allocation (the id is on every send response).
	const upperHex = "0123456789ABCDEF"
	var h [56]byte
	for i, c := range b[:n] {
		h[2*i], h[2*i+1] = upperHex[c>>4], upperHex[c&0x0f]
	}
	return string(h[:2*n])
}

// ParseOffsetMsgID extracts the store host and commit log offset from an
// offset message id (32 or 56 hex characters).
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: offset message id %q has %d characters, want 32 or 56", ErrBadField, id, len(id))
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: offset message id %q: %v", ErrBadField, id, err)
	}
	var a netip.Addr
	if len(b) == 16 {
		a = netip.AddrFrom4([4]byte(b[:4]))
		b = b[4:]
	} else {
		a = netip.AddrFrom16([16]byte(b[:16]))
		b = b[16:]
	}
	port := binary.BigEndian.Uint32(b)
	off := int64(binary.BigEndian.Uint64(b[4:]))
	return netip.AddrPortFrom(a, uint16(port)), off, nil
}

// UniqIDGenerator makes client message ids (the UNIQ_KEY property) in the
// layout RocketMQ clients use, 32 hex characters:
//
//	+----------+--------+-------------------+---------------------+-------------+
//	| IPv4 (4) | pid (2)| class loader id(4)| ms since month (4)  | counter (2) |
//	+----------+--------+-------------------+---------------------+-------------+
//
// Brokers treat the id as an opaque string. Safe for concurrent use.
type UniqIDGenerator struct {
	mu         sync.Mutex
	prefix     string
	startMonth time.Time
	nextMonth  time.Time
	counter    uint16
	now        func() time.Time
}

// NewUniqIDGenerator returns a generator for the given client IPv4 address
// (the zero value gives 0.0.0.0), process id and instance discriminator
// (Java's class-loader hash; any value that differs between instances of
// one process).
func NewUniqIDGenerator(ip netip.Addr, pid int, instance uint32) *UniqIDGenerator {
	var b [10]byte
	if ip.Is4() || ip.Is4In6() {
		v4 := ip.Unmap().As4()
		copy(b[:4], v4[:])
	}
	binary.BigEndian.PutUint16(b[4:], uint16(pid))
	binary.BigEndian.PutUint32(b[6:], instance)
	return &UniqIDGenerator{prefix: strings.ToUpper(hex.EncodeToString(b[:])), now: time.Now}
}

// Next returns a new id.
func (g *UniqIDGenerator) Next() string {
	g.mu.Lock()
	now := g.now()
	if !now.Before(g.nextMonth) {
		y, m, _ := now.Date()
		g.startMonth = time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		g.nextMonth = g.startMonth.AddDate(0, 1, 0)
	}
	g.counter++
	var b [6]byte
	binary.BigEndian.PutUint32(b[:], uint32(now.Sub(g.startMonth).Milliseconds()))
	binary.BigEndian.PutUint16(b[4:], g.counter)
	g.mu.Unlock()
	return g.prefix + strings.ToUpper(hex.EncodeToString(b[:]))
}
