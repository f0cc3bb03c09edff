package boot

import "os"

// InstanceEnv is the environment variable that names a service process's
// RocketMQ client instance: the part after "@" in the client id
// ("ip@instance") its producers and consumers present to brokers.
const InstanceEnv = "MQ_INSTANCE_NAME"

// InstanceName returns $MQ_INSTANCE_NAME, or "" when it is unset (the
// client then makes a unique name per process: pid and a random suffix).
//
// Why a service sets it: a broker's orderly queue lock belongs to a client
// id and lives 60 s after its last renewal (RocketMQ's rule). A service
// that crashes and comes back with a new client id finds its ordered
// queues locked by its dead self and consumes nothing from them until
// those locks expire. With the same id after a restart (the same address
// and the same instance name, as RocketMQ's instanceName /
// rocketmq.client.name) it renews its own locks at once. The name must
// therefore be stable across restarts of one replica and unique among
// replicas that share an address: the container or pod name, for
// example. Two live processes with one client id would both hold the
// same ordered queues, so never give the same name to replicas that may
// run at the same address at the same time.
func InstanceName() string { return os.Getenv(InstanceEnv) }
