// Package api is the one input and error contract of the services' HTTP
// and gRPC APIs: every refused request is a Kratos error (code, reason,
// message, metadata) whose message a person can act on, every request
// body is size-limited, typed by Content-Type and decoded strictly, and
// every field is checked against a Schema (lengths and ranges that fit
// the database columns) before a use case sees it.
//
// A service wires it once per server:
//
//	in := api.New(api.Options{Logger: logger}, service.Schemas)
//	http.NewServer(append(in.HTTPServerOptions(), ...)...)
//	grpc.NewServer(append(in.GRPCServerOptions(), ...)...)
//
// and adds in.Middleware() to both servers' middleware chains.
package api

import (
	"fmt"
	"net/http"

	"github.com/go-kratos/kratos/v2/errors"

	"github.com/tidemq/tide/services/kit/api/apierr"
)

// Reasons of the errors this package returns. Services keep their own
// domain reasons; these are the shared input ones.
const (
	// ReasonInvalidArgument is apierr's (a field is missing, too long,
	// out of range, of the wrong JSON type or unknown: 400, gRPC
	// InvalidArgument). Metadata "field" names it (a path such as
	// items[0].quantity).
	ReasonInvalidArgument = apierr.ReasonInvalidArgument
	// ReasonMalformedBody: the body is not valid JSON, or not a JSON
	// object (400).
	ReasonMalformedBody = "MALFORMED_BODY"
	// ReasonBodyTooLarge: the body exceeds the limit (413); metadata
	// "limit" is the limit in bytes.
	ReasonBodyTooLarge = "BODY_TOO_LARGE"
	// ReasonUnsupportedMediaType: a body with a Content-Type other than
	// application/json (415).
	ReasonUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// ReasonInternal: a failure without a reason of its own (500); its
	// details are logged, never sent.
	ReasonInternal = "INTERNAL"
)

// Invalid returns the INVALID_ARGUMENT error of one field: message
// "<field>: <why>", metadata field=<field>.
func Invalid(field, format string, args ...any) *errors.Error {
	why := fmt.Sprintf(format, args...)
	return errors.BadRequest(ReasonInvalidArgument, field+": "+why).
		WithMetadata(map[string]string{"field": field})
}

// Malformed returns the MALFORMED_BODY error.
func Malformed(format string, args ...any) *errors.Error {
	return errors.BadRequest(ReasonMalformedBody, fmt.Sprintf(format, args...))
}

// TooLarge returns the BODY_TOO_LARGE error for a limit in bytes.
func TooLarge(limit int64) *errors.Error {
	return errors.New(http.StatusRequestEntityTooLarge, ReasonBodyTooLarge,
		fmt.Sprintf("request body is larger than the limit of %d bytes", limit)).
		WithMetadata(map[string]string{"limit": fmt.Sprint(limit)})
}

// UnsupportedMediaType returns the UNSUPPORTED_MEDIA_TYPE error.
func UnsupportedMediaType(got string) *errors.Error {
	return errors.New(http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType,
		fmt.Sprintf("Content-Type %q is not supported: send the body as application/json", got)).
		WithMetadata(map[string]string{"content_type": got})
}
