package remoting

import (
	"context"
	"fmt"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Probe checks that a remoting server at addr serves requests: it dials,
// sends one harmless request (GET_BROKER_CLUSTER_INFO) and returns nil as
// soon as any response arrives, whatever its code, since a broker answers
// REQUEST_CODE_NOT_SUPPORTED and a NameServer the cluster table. It is what
// the daemons' -healthcheck flag runs (container healthchecks in images
// without a shell).
func Probe(ctx context.Context, addr string) error {
	cl := NewClient(ClientOptions{})
	defer cl.Close()
	if _, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil)); err != nil {
		return fmt.Errorf("probe %s: %w", addr, err)
	}
	return nil
}
