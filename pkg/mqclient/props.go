package mqclient

import (
	"slices"
	"strings"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// A single message's outgoing properties are kept without its UNIQ_KEY
// (outgoing.msgID) and its TIDE_PSEQ (outgoing.stamp): most messages
// have no other property, and a map only to hold those two cost a map
// header and a group of slots per message (about 340 bytes). outgoing.props
// is then nil. encodeProps writes the properties with the two set, the
// bytes protocol.EncodeProperties gives for a map holding them.

// encodeProps returns props encoded with UNIQ_KEY set to uniq (none when
// empty) and, with st, TIDE_PSEQ set to st: protocol.EncodeProperties of
// props plus those two (names sorted, empty names and values left out).
// props' own UNIQ_KEY and TIDE_PSEQ entries, if any, are ignored.
func encodeProps(props map[string]string, uniq string, st *protocol.ProducerStamp) string {
	var kb [24]string // on the stack for the usual handful of properties
	keys := kb[:0]
	n := 0
	for k, v := range props {
		if k == "" || v == "" || k == protocol.PropUniqKey || k == protocol.PropProducerStamp {
			continue
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	if uniq != "" {
		keys = append(keys, protocol.PropUniqKey)
		n += len(protocol.PropUniqKey) + len(uniq) + 2
	}
	var sb [3 * 20]byte
	var stv []byte
	if st != nil {
		stv = st.AppendValue(sb[:0])
		keys = append(keys, protocol.PropProducerStamp)
		n += len(protocol.PropProducerStamp) + len(stv) + 2
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(protocol.NameValueSeparator)
		switch k {
		case protocol.PropUniqKey:
			b.WriteString(uniq)
		case protocol.PropProducerStamp:
			b.Write(stv)
		default:
			b.WriteString(props[k])
		}
		b.WriteByte(protocol.PropertySeparator)
	}
	return b.String()
}

// propsLen returns the length encodeProps(props, uniq, nil) has, for
// props without UNIQ_KEY and TIDE_PSEQ entries.
func propsLen(props map[string]string, uniq string) int {
	n := protocol.PropertiesLen(props)
	if uniq != "" {
		n += len(protocol.PropUniqKey) + len(uniq) + 2
	}
	return n
}
