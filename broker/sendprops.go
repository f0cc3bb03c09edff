package broker

import (
	"slices"
	"strings"

	"github.com/tidemq/tide/broker/internal/timer"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// The send path's properties without a map. A send's stored property
// string is EncodeProperties of the map the broker builds: the client's
// properties (DecodeProperties; for a batch item, the request header's
// laid over them), CLUSTER set to the broker's cluster name, then the
// changes of the delay, timer, transaction and reply paths. When none of
// those paths applies, rawProps builds that string straight from the
// client's strings: the pieces DecodeProperties keeps, the header's and
// CLUSTER after them, sorted by name (stable, so the last piece of a
// name wins as in the map), empty values left out, as EncodeProperties
// does. It scans the names the later steps read and falls back to the
// map when one of them is there.

// rawFallback lists the properties whose presence sends a message down the
// map path: the steps after the decode read them and may change the
// properties (schedule.Divert, timer.Accept, transaction.IsHalf and
// Prepare) or read them from the map (putAndRespond's REAL_TOPIC).
var rawFallback = [...]string{
	protocol.PropDelayLevel,
	timer.PropDeliverMS,
	timer.PropDelaySec,
	timer.PropDelayMS,
	timer.PropDelUniqKey,
	protocol.PropTransactionPrepared,
	protocol.PropRealTopic,
}

// rawProp is one name/value piece of a property string.
type rawProp struct{ k, v string }

// appendRawProps appends the pieces of s that DecodeProperties keeps, in
// order, leaving out CLUSTER (the broker sets it). ok is false when s has
// a property of rawFallback, or a producer stamp with an empty value
// (sendStamp tells it from an absent one, which the encoded string
// cannot).
func appendRawProps(dst []rawProp, s string) (_ []rawProp, ok bool) {
	for len(s) > 0 {
		var k, v string
		var good bool
		if k, v, s, good = protocol.NextProperty(s); !good {
			continue
		}
		switch {
		case k == protocol.PropCluster:
			continue
		case k == protocol.PropProducerStamp && v == "":
			return dst, false
		case slices.Contains(rawFallback[:], k):
			return dst, false
		}
		dst = append(dst, rawProp{k, v})
	}
	return dst, true
}

// sortRawProps sorts props by name, stably (insertion sort: a handful of
// pieces, usually in order already).
func sortRawProps(props []rawProp) {
	for i := 1; i < len(props); i++ {
		p := props[i]
		j := i
		for j > 0 && props[j-1].k > p.k {
			props[j] = props[j-1]
			j--
		}
		props[j] = p
	}
}

// writeRawProps writes sorted props as EncodeProperties writes the map
// they make: of each name its last piece, none with an empty value.
func writeRawProps(b *strings.Builder, props []rawProp) {
	for i, p := range props {
		if p.v != "" && (i+1 == len(props) || props[i+1].k != p.k) {
			b.WriteString(p.k)
			b.WriteByte(protocol.NameValueSeparator)
			b.WriteString(p.v)
			b.WriteByte(protocol.PropertySeparator)
		}
	}
}

// rawProps returns the encoded property string of each message of a send
// (a single message: items is nil and header holds its properties; a
// batch: the items' properties with the header's laid over them), as the
// map path would store them; the strings share one allocation. ok is
// false when a message must take the map path.
func rawProps(header string, items []protocol.BatchItem, cluster string) (enc []string, ok bool) {
	var hb [8]rawProp
	hp, ok := appendRawProps(hb[:0], header)
	if !ok {
		return nil, false
	}
	n := max(len(items), 1)
	// An upper bound of the output, so the builder allocates once: a
	// message writes at most its pieces, each with both separators, the
	// header's and CLUSTER.
	per := len(header) + 1 + len(protocol.PropCluster) + len(cluster) + 2
	bound := n * per
	for _, it := range items {
		bound += len(it.Properties) + 1
	}
	var b strings.Builder
	b.Grow(bound)
	var eb [32]int
	ends := eb[:0]
	var pb [16]rawProp
	for i := 0; i < n; i++ {
		props := pb[:0]
		if items != nil {
			if props, ok = appendRawProps(props, items[i].Properties); !ok {
				return nil, false
			}
		}
		props = append(props, hp...)
		props = append(props, rawProp{protocol.PropCluster, cluster})
		sortRawProps(props)
		writeRawProps(&b, props)
		ends = append(ends, b.Len())
	}
	s := b.String()
	enc = make([]string, n)
	prev := 0
	for i, end := range ends {
		enc[i] = s[prev:end]
		prev = end
	}
	return enc, true
}

// sendProperty returns property k of msgs[i]: from its encoded string when
// the send took the raw path (enc not nil), else from its map. An empty
// value reads as absent on the raw path; appendRawProps sends the one
// property where that matters (the producer stamp) down the map path.
func sendProperty(msgs []*protocol.MessageExt, enc []string, i int, k string) (string, bool) {
	if enc != nil {
		return protocol.PropertyValue(enc[i], k)
	}
	v, ok := msgs[i].Properties[k]
	return v, ok
}
