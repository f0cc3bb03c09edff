package api

import (
	"bytes"
	"context"
	"encoding/json"
	stderrors "errors"
	"io"
	"mime"
	nethttp "net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/log"
	"github.com/go-kratos/kratos/v2/middleware"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/go-kratos/kratos/v2/transport/http/binding"
	"github.com/gorilla/mux"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxBody is the body limit when Options sets none: far above
// any valid request of the services (an order of 100 items is ~10 KiB).
const DefaultMaxBody = 64 << 10

// Options configure the input contract.
type Options struct {
	// MaxBody is the request body limit in bytes, HTTP and gRPC
	// (DefaultMaxBody when 0).
	MaxBody int64
	// Logger receives one warning per refused request (4xx) and one
	// error per failure (5xx). Nil logs nothing.
	Logger log.Logger
}

// Input decodes, limits and checks the requests of one service's
// servers, and encodes their errors. It is safe for concurrent use.
type Input struct {
	max     int64
	log     *log.Helper
	schemas Schemas
}

// New returns the Input of a service with the schemas of its requests.
func New(o Options, schemas Schemas) *Input {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = log.NewStdLogger(io.Discard)
	}
	return &Input{max: o.MaxBody, log: log.NewHelper(o.Logger), schemas: schemas}
}

// MaxBody returns the body limit in bytes.
func (in *Input) MaxBody() int64 { return in.max }

// HTTPServerOptions returns the Kratos HTTP server options: the body
// limit on every route (hand-written handlers included), the strict
// JSON body decoder, the checked query and path decoders, and the error
// encoder.
func (in *Input) HTTPServerOptions() []khttp.ServerOption {
	return []khttp.ServerOption{
		khttp.Filter(in.limitBody),
		khttp.RequestDecoder(in.decodeBody),
		khttp.RequestQueryDecoder(in.decodeQuery),
		khttp.RequestVarsDecoder(in.decodeVars),
		khttp.ErrorEncoder(in.EncodeError),
	}
}

// GRPCMaxRecvMsgSize is the grpc.ServerOption that applies the body limit
// to gRPC messages (pass it in the Kratos grpc.Options).
func (in *Input) GRPCMaxRecvMsgSize() grpc.ServerOption { return grpc.MaxRecvMsgSize(int(in.max)) }

// Middleware checks every request message that has a schema (HTTP and
// gRPC alike). It logs nothing: Logging (placed outside it, see
// ServerMiddleware) and EncodeError log each refused request once.
func (in *Input) Middleware() middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req any) (any, error) {
			if m, ok := req.(proto.Message); ok {
				if s, ok := in.schemas[m.ProtoReflect().Descriptor().FullName()]; ok {
					if err := s.Check(m); err != nil {
						return nil, err
					}
				}
			}
			return next(ctx, req)
		}
	}
}

// limitBody refuses a declared Content-Length over the limit at once and
// caps what any handler can read.
func (in *Input) limitBody(next nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.ContentLength > in.max {
			in.EncodeError(w, r, TooLarge(in.max))
			return
		}
		r.Body = nethttp.MaxBytesReader(w, r.Body, in.max)
		next.ServeHTTP(w, r)
	})
}

// decodeBody reads a JSON body into v. A body without Content-Type is
// taken as JSON; any other type than application/json is refused (415).
func (in *Input) decodeBody(r *nethttp.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	if err != nil {
		var mbe *nethttp.MaxBytesError
		if stderrors.As(err, &mbe) {
			return TooLarge(in.max)
		}
		return Malformed("request body could not be read: %v", err)
	}
	if ct := r.Header.Get("Content-Type"); !ContentTypeJSON(ct) {
		return UnsupportedMediaType(clip(ct))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if !utf8.Valid(data) {
		return Malformed("request body is not valid UTF-8 text")
	}
	m, ok := v.(proto.Message)
	if !ok {
		return decodeStruct(data, v)
	}
	md := m.ProtoReflect().Descriptor()
	if err := checkJSON(data, md, in.schemas[md.FullName()]); err != nil {
		return err
	}
	if err := protojson.Unmarshal(data, m); err != nil {
		// checkJSON let through something protojson refuses: say which
		// message, log the details.
		in.log.Warnf("api: %s body passed the JSON check but not protojson: %v", md.FullName(), err)
		return Malformed("request body is not a valid %s", md.Name())
	}
	return nil
}

func (in *Input) decodeQuery(r *nethttp.Request, v any) error {
	return in.decodeValues(r.URL.Query(), v)
}

func (in *Input) decodeVars(r *nethttp.Request, v any) error {
	vars := map[string][]string{}
	for k, s := range mux.Vars(r) {
		vars[k] = []string{s}
	}
	return in.decodeValues(vars, v)
}

func (in *Input) decodeValues(vals map[string][]string, v any) error {
	if m, ok := v.(proto.Message); ok {
		md := m.ProtoReflect().Descriptor()
		if err := checkValues(vals, md, in.schemas[md.FullName()]); err != nil {
			return err
		}
	}
	if err := binding.BindQuery(vals, v); err != nil {
		in.log.Warnf("api: query passed the check but not the binding: %v", err)
		return errors.BadRequest(ReasonInvalidArgument, "query or path parameters could not be read")
	}
	return nil
}

// errorBody is the one error shape: Kratos's Status as JSON.
type errorBody struct {
	Code     int32             `json:"code"`
	Reason   string            `json:"reason"`
	Message  string            `json:"message"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// EncodeError writes err as the JSON error shape with its HTTP status.
// Each is logged once: client mistakes (4xx) as warnings, failures
// (5xx) as errors with their cause, and an error that is not a Kratos error is
// answered 500 INTERNAL without its text (it may hold database or
// protobuf details).
func (in *Input) EncodeError(w nethttp.ResponseWriter, r *nethttp.Request, err error) {
	se := errors.FromError(err)
	if se.Code >= 500 {
		in.log.WithContext(r.Context()).Errorf("api: %s %s failed: %v", r.Method, r.URL.Path, err)
		if se.Reason == errors.UnknownReason {
			se = errors.InternalServer(ReasonInternal, "internal error; it was logged")
		}
	} else {
		in.refused(r.Context(), r.Method, r.URL.Path, se)
	}
	b, _ := json.Marshal(errorBody{Code: se.Code, Reason: se.Reason, Message: se.Message, Metadata: se.Metadata})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(se.Code))
	_, _ = w.Write(append(b, '\n'))
}

func (in *Input) refused(ctx context.Context, method, op string, err error) {
	se := errors.FromError(err)
	in.log.WithContext(ctx).Warnw("msg", "api: request refused", "method", method, "operation", op,
		"code", se.Code, "reason", se.Reason, "message", se.Message, "field", se.Metadata["field"])
}

// ContentTypeJSON reports whether ct is empty or application/json (with
// any parameters): the check of hand-written handlers.
func ContentTypeJSON(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.EqualFold(mt, "application/json")
}

// DecodeJSON reads the JSON body of a hand-written handler into the Go
// value v with the same contract as the API routes: a Content-Type other
// than application/json is UNSUPPORTED_MEDIA_TYPE (none is JSON), an
// empty body leaves v as it is, a body over the limit (HTTPServerOptions'
// filter) is BODY_TOO_LARGE, bad JSON MALFORMED_BODY, an unknown field or
// a value of the wrong type INVALID_ARGUMENT naming the field.
func DecodeJSON(r *nethttp.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !ContentTypeJSON(ct) {
		return UnsupportedMediaType(clip(ct))
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *nethttp.MaxBytesError
		if stderrors.As(err, &mbe) {
			return TooLarge(mbe.Limit)
		}
		return Malformed("request body could not be read: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return decodeStruct(data, v)
}

func decodeStruct(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
		if _, terr := dec.Token(); !stderrors.Is(terr, io.EOF) {
			return Malformed("request body is not valid JSON: unexpected data after the JSON value")
		}
		return nil
	case stderrors.As(err, &se), stderrors.Is(err, io.ErrUnexpectedEOF):
		return Malformed("request body is not valid JSON: %s", jsonWhy(err, data))
	case stderrors.As(err, &te):
		if te.Field == "" {
			return Malformed("request body must be a JSON object, got %s", te.Value)
		}
		return Invalid(te.Field, "must be %s, got %s", goType(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return Invalid(clip(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)), "unknown field")
	}
	return Malformed("request body does not match the API: %s", clip(err.Error()))
}

func goType(kind string) string {
	switch kind {
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number in range"
	case "float32", "float64":
		return "a number"
	}
	return "a JSON " + kind
}

// QueryInt reads the integer query parameter name of a hand-written
// handler: def when absent, INVALID_ARGUMENT naming it when it is not a
// whole number from min to max.
func QueryInt(r *nethttp.Request, name string, min, max, def int64) (int64, error) {
	vals := r.URL.Query()[name]
	switch {
	case len(vals) == 0 || vals[0] == "":
		return def, nil
	case len(vals) > 1:
		return 0, Invalid(name, "must be given once, got %d values", len(vals))
	}
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || n < min || n > max {
		return 0, Invalid(name, "must be a whole number from %d to %d, got %q", min, max, clip(vals[0]))
	}
	return n, nil
}
