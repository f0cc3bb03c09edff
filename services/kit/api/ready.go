package api

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// AllReady is ready when every check is, in order; the first error wins.
func AllReady(checks ...Ready) Ready {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// Started is ready while running reports true (a server that started and
// was not stopped): "<what> not started yet" otherwise.
func Started(what string, running func() bool) Ready {
	return func(context.Context) error {
		if !running() {
			return fmt.Errorf("%s not started yet", what)
		}
		return nil
	}
}

// Dials is ready when one of addrs accepts a TCP connection (the
// NameServers): "<what>: <last dial error>" otherwise.
func Dials(what string, addrs []string) Ready {
	return func(ctx context.Context) error {
		last := errors.New("no address")
		for _, a := range addrs {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", a)
			if err == nil {
				c.Close()
				return nil
			}
			last = err
		}
		return fmt.Errorf("%s: %w", what, last)
	}
}
