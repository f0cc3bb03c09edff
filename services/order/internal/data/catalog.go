package data

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"

	inventoryv1 "github.com/tidemq/tide/api/inventory/v1"
	"github.com/tidemq/tide/services/kit/api"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// Catalog is biz.Catalog on the inventory service's gRPC API
// (inventory.grpc_addr): one GetProduct per distinct product of an order,
// each bounded by inventory.timeout (default 3s). The connection is
// dialled lazily by gRPC, so the order service starts while the inventory
// service is down; orders are then refused with INVENTORY_UNAVAILABLE.
// Safe for concurrent use.
type Catalog struct {
	inventory *api.Client[inventoryv1.InventoryClient]
}

// NewCatalog dials the inventory service (kit/api.DialClient). cleanup
// closes the connection.
func NewCatalog(c *kitconf.Peer) (biz.Catalog, func(), error) {
	inventory, cleanup, err := api.DialClient("inventory", c, "127.0.0.1:9002", 3*time.Second, inventoryv1.NewInventoryClient)
	if err != nil {
		return nil, nil, err
	}
	return &Catalog{inventory: inventory}, cleanup, nil
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
	ctx, cancel := c.inventory.Bound(ctx)
	defer cancel()
	r, err := c.inventory.API.GetProduct(ctx, &inventoryv1.GetProductRequest{Id: id})
	if err != nil {
		return 0, err
	}
	return r.GetProduct().GetPrice(), nil
}
