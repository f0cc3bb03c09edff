// Package nameserver is Tide's NameServer: the RocketMQ 4.x routing daemon
// that brokers register with and clients ask for topic routes. It speaks
// the remoting protocol of rocketmq-protocol.md §3 and is a drop-in for the
// Java NameServer as far as rocketmq-client-go v2.1.2, Tide's broker and
// Tide's client are concerned.
//
// # What it serves
//
//   - REGISTER_BROKER (plain and compressed bodies, bodyCrc32 checked when
//     non-zero; a mismatch is answered SYSTEM_ERROR "crc32 not match"),
//     UNREGISTER_BROKER, QUERY_DATA_VERSION;
//   - GET_ROUTEINFO_BY_TOPIC (TOPIC_NOT_EXIST, code 17, when the topic has
//     no queue data or no registered broker), GET_BROKER_CLUSTER_INFO,
//     GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER,
//     DELETE_TOPIC_IN_NAMESRV;
//   - PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE.
//
// Other codes are answered REQUEST_CODE_NOT_SUPPORTED by the transport.
//
// # Contracts
//
// Route bodies are compact JSON with quoted broker ids and no whitespace,
// every field present; that is the one shape the hand-written route parser
// of rocketmq-client-go v2.1.2 and Java clients of every version read
// (protocol.TopicRouteData.Encode). Queue and broker data are sorted by
// broker name, so an unchanged table gives byte-identical routes.
//
// The route table lives in memory only; brokers re-register every 30 s. A
// broker address disappears when it unregisters, when the connection it
// last registered on closes, or when it has not registered for
// Options.BrokerExpiry (120 s), checked every Options.ScanInterval (10 s);
// the connection of an expired broker is closed. A broker name loses its
// queue data and cluster membership with its last address. Only a master
// (broker id 0) changes queue data, and only on its first registration or
// when its DataVersion changed; topics it stops listing are kept until
// DELETE_TOPIC_IN_NAMESRV, as in Java (brokers send single-topic
// increments).
//
// The KV configuration is persisted to Options.KVConfigPath (Java's
// kvConfig.json format) on every change, by atomic rename. Values of the
// ORDER_TOPIC_CONFIG namespace become the orderTopicConf of routes and the
// body of REGISTER_BROKER responses.
//
// # Lifecycle
//
// New validates Options and loads the KV file; Start listens and serves in
// the background; Shutdown stops accepting, waits for running requests
// (bounded by its context) and closes all connections. NameServer methods
// are safe for concurrent use. Package nameservertest starts one in-process
// for tests; cmd/nameserver is the daemon.
package nameserver
