package protocol

import (
	"strconv"
)

// Command is one remoting request or response: the RocketMQ
// RemotingCommand. A Command is a plain value with no internal locking; the
// goroutine that builds or decodes it owns it until it hands it over.
//
// ExtFields carries the typed request/response headers as strings (the
// wire form); use the typed headers in headers.go to fill and read them.
// Body is owned by the Command; decoders may alias it into the frame buffer
// they were given.
type Command struct {
	Code      int16
	Language  byte
	Version   int32
	Opaque    int32
	Flag      int32
	Remark    string
	ExtFields map[string]string
	// Header, when set, is a typed header whose fields are sent beside
	// ExtFields (whose keys must differ from its fields'): written
	// straight into a ROCKETMQ binary header, encoded into a map for a
	// JSON one. A command's ext fields are Header's plus ExtFields; Ext
	// and Fields read both. DecodeFrame sets it for the send and pull
	// requests whose header it can type exactly (typedheader.go): their
	// header fields are then not in ExtFields (nil when there are no
	// others), so code that may see a decoded send or pull reads its
	// fields with DecodeSendRequest, DecodePullRequest,
	// DecodeRequestHeader, Ext or Fields, not from ExtFields.
	Header        ExtAppender
	Body          []byte
	SerializeType byte // SerializeJSON or SerializeRocketMQ, used when encoding
	// typedHeader: DecodeFrame set Header from the frame, exactly (so the
	// Decode* functions may return it without checking it).
	typedHeader bool
}

// NewRequest returns a request with the given code and ext fields (which
// may be nil). Opaque is left 0: the transport assigns it.
func NewRequest(code int16, ext map[string]string, body []byte) *Command {
	if ext == nil {
		ext = map[string]string{}
	}
	return &Command{Code: code, Language: LangGo, Version: Version, ExtFields: ext, Body: body}
}

// NewTypedRequest returns a request whose ext fields are h's fields
// (Command.Header): encoded without a map in either serialize type.
func NewTypedRequest(code int16, h ExtAppender, body []byte) *Command {
	return &Command{Code: code, Language: LangGo, Version: Version, Header: h, Body: body}
}

// NewResponse returns a response to req with the given code and remark.
// It copies the request's opaque and serialize type, as RocketMQ requires.
func NewResponse(req *Command, code int16, remark string) *Command {
	resp := &Command{
		Code:          code,
		Language:      LangGo,
		Version:       Version,
		Flag:          FlagResponse,
		Remark:        remark,
		ExtFields:     map[string]string{},
		SerializeType: SerializeJSON,
	}
	if req != nil {
		resp.Opaque = req.Opaque
		resp.SerializeType = req.SerializeType
	}
	return resp
}

// NewTypedResponse is NewResponse whose ext fields are h's
// (Command.Header), with no ExtFields map: a hot path's answer, written
// without a map in either serialize type.
func NewTypedResponse(req *Command, code int16, remark string, h ExtAppender) *Command {
	resp := &Command{Code: code, Language: LangGo, Version: Version, Flag: FlagResponse, Remark: remark, Header: h}
	if req != nil {
		resp.Opaque = req.Opaque
		resp.SerializeType = req.SerializeType
	}
	return resp
}

// IsResponse reports whether the response flag bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the sender asked for no reply (flag bit 1).
// Note that rocketmq-client-go v2.1.2 never sets it, even for its "oneway"
// calls: those must be answered.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Ext returns the ext field k ("" when absent), from ExtFields or else
// Header (found among the entries its AppendBinaryExt writes, without the
// map of Encode; still an encoding per call: not for hot paths).
func (c *Command) Ext(k string) string {
	if v, ok := c.ExtFields[k]; ok || c.Header == nil {
		return v
	}
	v, _ := headerField(c.Header, k)
	return v
}

// headerField returns the value of h's ext entry k and whether it has
// one, read from the entries AppendBinaryExt writes (the same as Encode's
// map).
func headerField(h ExtAppender, k string) (string, bool) {
	var buf [256]byte
	e := h.AppendBinaryExt(buf[:0])
	for i := 0; i < len(e); {
		var key, v []byte
		key, v, i = nextExt(e, i)
		if string(key) == k {
			return string(v), true
		}
	}
	return "", false
}

// SetExt sets ext field k, allocating the map when needed.
func (c *Command) SetExt(k, v string) {
	if c.ExtFields == nil {
		c.ExtFields = map[string]string{}
	}
	c.ExtFields[k] = v
}

// SetExtInt sets ext field k to the decimal form of v.
func (c *Command) SetExtInt(k string, v int64) { c.SetExt(k, strconv.FormatInt(v, 10)) }

// Err returns nil when the command is a SUCCESS response and an *Error
// carrying its code and remark otherwise. Callers that accept other codes
// (pull, send) inspect Code themselves.
func (c *Command) Err() error {
	if c.Code == Success {
		return nil
	}
	return &Error{Code: c.Code, Remark: c.Remark}
}
