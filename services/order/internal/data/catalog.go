package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/grpc"

	inventoryv1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// Catalog is biz.Catalog on the inventory service's gRPC API
// (inventory.grpc_addr): one GetProduct per distinct product of an order.
// The connection is dialled lazily by gRPC, so the order service starts
// while the inventory service is down; orders are then refused with
// INVENTORY_UNAVAILABLE. Safe for concurrent use.
type Catalog struct {
	client  inventoryv1.InventoryClient
	timeout time.Duration
}

// NewCatalog dials the inventory service. cleanup closes the connection.
func NewCatalog(c *conf.Inventory) (biz.Catalog, func(), error) {
	conn, cleanup, err := api.Dial("inventory", c.GetGrpcAddr(), "127.0.0.1:9002")
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	return NewCatalogConn(conn, c.GetTimeout().AsDuration()), cleanup, nil
}

// NewCatalogConn returns a Catalog on an existing connection; timeout
// bounds each call (default 3s).
func NewCatalogConn(conn grpc.ClientConnInterface, timeout time.Duration) *Catalog {
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	return &Catalog{client: inventoryv1.NewInventoryClient(conn), timeout: timeout}
}

// Prices implements biz.Catalog: a NotFound answer leaves the product out
// of the map; any other failure is an error.
func (c *Catalog) Prices(ctx context.Context, ids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		p, err := c.price(ctx, id)
		if errors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("data: inventory GetProduct %s: %w", id, err)
		}
		out[id] = p
	}
	return out, nil
}

func (c *Catalog) price(ctx context.Context, id string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	r, err := c.client.GetProduct(ctx, &inventoryv1.GetProductRequest{Id: id})
	if err != nil {
		return 0, err
	}
	return r.GetProduct().GetPrice(), nil
}
