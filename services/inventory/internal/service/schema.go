package service

import (
	"github.com/go-kratos/kratos/v2/log"

	v1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"
)

// MaxPageSize is the largest page ListProducts returns.
const MaxPageSize = 100

// Schemas bound every field a client sends: product ids (and the page
// token, the last id of a page) are VARCHAR(64); page_size is 0 (the
// default page) to MaxPageSize.
var Schemas = api.Schemas{
	(&v1.GetProductRequest{}).ProtoReflect().Descriptor().FullName(): {
		"id": api.Text(1, 64),
	},
	(&v1.ListProductsRequest{}).ProtoReflect().Descriptor().FullName(): {
		"page_size":  api.Int(0, MaxPageSize),
		"page_token": api.Text(0, 64),
	},
}

// NewInput returns the input contract of the service's HTTP and gRPC
// servers: its request schemas, body limit and error encoding
// (services/kit/api); logger gets refused and failed requests.
func NewInput(logger log.Logger) *api.Input {
	return api.New(api.Options{Logger: logger}, Schemas)
}
