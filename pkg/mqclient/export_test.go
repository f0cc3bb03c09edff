package mqclient

import "context"

// DropBrokerConn closes c's connection to the broker at addr, as a network
// cut would (tests of what a dropped connection does).
func DropBrokerConn(c *PushConsumer, addr string) error {
	conn, err := c.c.rc.Conn(context.Background(), addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
