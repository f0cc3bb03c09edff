package broker

import (
	"errors"
	"fmt"
	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/store"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Options configures a broker. Field tags name the broker.conf keys, which
// are RocketMQ's own, so an existing broker.conf works unchanged (keys Tide
// does not know are reported by Apply and logged as warnings).
//
// Get a value with DefaultOptions, change it, and call Validate (New does).
type Options struct {
	BrokerClusterName string `conf:"brokerClusterName"`
	BrokerName        string `conf:"brokerName"`
	BrokerID          int64  `conf:"brokerId"`
	BrokerRole        string `conf:"brokerRole"` // ASYNC_MASTER, SYNC_MASTER or SLAVE
	// ListenPort is the client port; ListenAddr (Tide) may bind a specific
	// interface. Port 0 picks a free port (tests).
	ListenPort int    `conf:"listenPort"`
	ListenAddr string `conf:"listenAddr"`
	// NamesrvAddr lists NameServers separated by ';'.
	NamesrvAddr string `conf:"namesrvAddr"`
	// BrokerIP1 is the address clients dial: what is registered with the
	// NameServers and written as store host into every message.
	BrokerIP1       string `conf:"brokerIP1"`
	BrokerIP2       string `conf:"brokerIP2"`
	HAListenPort    int    `conf:"haListenPort"`
	HAMasterAddress string `conf:"haMasterAddress"`
	// HAListenAddr (Tide) is the host the HA port binds; empty: HAHost()
	// (the broker's own address, not every interface).
	HAListenAddr string `conf:"haListenAddr"`
	// HAAuthSecret (Tide), at least 16 characters and the same on master
	// and slaves, makes a slave prove it knows it (HMAC-SHA256 over a
	// fresh challenge) before the master streams a byte of commit log.
	// Empty: no authentication (RocketMQ's behaviour; a warning is logged).
	HAAuthSecret string `conf:"haAuthSecret"`
	// SlaveTimeout bounds how long a SYNC_MASTER send waits for the
	// slave's ack before answering FLUSH_SLAVE_TIMEOUT (ms, default 3000).
	SlaveTimeout     int   `conf:"slaveTimeout"`
	BrokerPermission int32 `conf:"brokerPermission"`

	// Store holds the storage keys (storePathRootDir, flushDiskType,
	// mappedFileSizeCommitLog, maxMessageSize, messageDelayLevel, ...).
	Store store.Config

	AutoCreateTopicEnable       bool   `conf:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup bool   `conf:"autoCreateSubscriptionGroup"`
	DefaultTopicQueueNums       int32  `conf:"defaultTopicQueueNums"`
	ClusterTopicEnable          bool   `conf:"clusterTopicEnable"`
	BrokerTopicEnable           bool   `conf:"brokerTopicEnable"`
	TraceTopicEnable            bool   `conf:"traceTopicEnable"`
	TraceOn                     bool   `conf:"traceOn"`
	RegionID                    string `conf:"regionId"`
	EnablePropertyFilter        bool   `conf:"enablePropertyFilter"`
	StoreReplyMessageEnable     bool   `conf:"storeReplyMessageEnable"`

	LongPollingEnable     bool `conf:"longPollingEnable"`
	ShortPollingTimeMills int  `conf:"shortPollingTimeMills"`
	SlaveReadEnable       bool `conf:"slaveReadEnable"`

	TransactionTimeOut       int `conf:"transactionTimeOut"`
	TransactionCheckInterval int `conf:"transactionCheckInterval"`
	TransactionCheckMax      int `conf:"transactionCheckMax"`

	RegisterNameServerPeriod    int `conf:"registerNameServerPeriod"`
	RegisterBrokerTimeoutMills  int `conf:"registerBrokerTimeoutMills"`
	FlushConsumerOffsetInterval int `conf:"flushConsumerOffsetInterval"`
	FlushDelayOffsetInterval    int `conf:"flushDelayOffsetInterval"`

	// TimerMaxDelaySec bounds arbitrary-time delivery (RocketMQ 5's
	// timerMaxDelaySec); later deliver-at times are refused.
	TimerMaxDelaySec int `conf:"timerMaxDelaySec"`

	// TideExtensions (Tide, default true) switches every Tide extension
	// a client can see: the Tide request codes of clients and operators
	// (10001-10004 and 10006, answered REQUEST_CODE_NOT_SUPPORTED when
	// off, as a RocketMQ broker answers them), timers with recall (the
	// RocketMQ 5 timer properties and TIMER_DEL_UNIQKEY are then ordinary
	// properties: the message is stored and delivered at once, as
	// RocketMQ 4.9 does) and the extension list in the runtime info
	// (GET_BROKER_RUNTIME_INFO then says V4_9_7). Off, the broker behaves
	// as Apache RocketMQ 4.9 towards clients, so applications can be
	// tested against what a plain RocketMQ cluster offers. Timers stored
	// before the switch was turned off still fire. Broker-to-broker
	// requests (TideGetMetadata from a slave) stay on: they never reach a
	// client. Every later extension must honour this switch.
	TideExtensions bool `conf:"tideExtensions"`

	// ProducerIDExpirationMs (Tide, default 7 days, as Kafka's
	// transactional.id.expiration.ms) forgets an idempotent producer id
	// that sent nothing for that long; a retry arriving later is stored
	// again. See docs/broker.md "Idempotent sends".
	ProducerIDExpirationMs int64 `conf:"producerIdExpirationMs"`

	ServerSocketMaxFrame int `conf:"serverSocketMaxFrameSize"`

	// MetricsPromExporterPort serves Prometheus /metrics and /healthz on
	// this port (RocketMQ 5's key; 0 = off). MetricsListenAddr (Tide)
	// gives a full host:port instead.
	MetricsPromExporterPort int    `conf:"metricsPromExporterPort"`
	MetricsListenAddr       string `conf:"metricsListenAddr"`
	// PprofEnable (Tide, default off) also serves Go's /debug/pprof
	// on the metrics port, for profiling a running broker. Leave it off
	// where the metrics port is reachable by untrusted hosts.
	PprofEnable bool `conf:"pprofEnable"`

	// Security and limits (docs/security.md). AclEnable is RocketMQ's
	// key; PlainAclFile (Tide) names the ACL file, default AclFile().
	AclEnable    bool   `conf:"aclEnable"`
	PlainAclFile string `conf:"plainAclFile"`
	// InnerClientAuthenticationCredentials (RocketMQ 5's key and format,
	// {"accessKey":"...","secretKey":"..."}) is the account this broker
	// signs its own requests to other brokers with: a slave's metadata
	// sync, admin-only on an ACL master. Empty: unsigned, so the master
	// must have the slave's address in globalWhiteRemoteAddresses.
	InnerClientAuthenticationCredentials string `conf:"innerClientAuthenticationCredentials"`
	// TLSEnable makes the client port, the HA port and every outgoing
	// connection (NameServers, master) speak TLS with TLSCertPath /
	// TLSKeyPath, trusting TLSCAPath; TLSClientAuth additionally requires
	// client certificates signed by TLSCAPath.
	TLSEnable     bool   `conf:"tlsEnable"`
	TLSCertPath   string `conf:"tlsCertPath"`
	TLSKeyPath    string `conf:"tlsKeyPath"`
	TLSCAPath     string `conf:"tlsCAPath"`
	TLSClientAuth bool   `conf:"tlsClientAuth"`
	// TLSMode is RocketMQ's tls.server.mode for the client port and the
	// HA port: disabled (plain only), permissive (plain and TLS on one
	// port, RocketMQ's default) or enforcing (TLS only). Empty: enforcing
	// with TLSEnable, else permissive. Permissive without
	// TLSCertPath/TLSKeyPath serves TLS clients a self-signed certificate
	// generated at start; enforcing needs them.
	TLSMode string `conf:"tlsMode,tls.server.mode"`
	// Client-port limits: open connections (0 = none), idle seconds before
	// a silent connection is closed (RocketMQ's key, 120), handlers in
	// flight per connection (beyond: SYSTEM_BUSY), header bytes per frame
	// and milliseconds for a started frame to arrive whole.
	ServerMaxConnections            int `conf:"serverMaxConnections"`
	ServerChannelMaxIdleTimeSeconds int `conf:"serverChannelMaxIdleTimeSeconds"`
	ServerMaxInFlightPerConn        int `conf:"serverMaxInFlightPerConn"`
	ServerMaxHeaderSize             int `conf:"serverMaxHeaderSize"`
	ServerFrameReadTimeoutMillis    int `conf:"serverFrameReadTimeoutMillis"`
	// Long-polling pulls held at once in the broker and per connection
	// (0 = no bound); a pull beyond either is answered SYSTEM_BUSY at once.
	MaxHeldPullRequests        int `conf:"maxHeldPullRequests"`
	MaxHeldPullRequestsPerConn int `conf:"maxHeldPullRequestsPerConn"`

	// Controller mode (docs/controller.md; RocketMQ 5's keys): the
	// controllers assign the broker's id and role, brokerId is ignored
	// and brokerRole only says which master flavour to run as master.
	// ControllerJoinTimeoutMills (Tide) bounds settling the role at start.
	EnableControllerMode            bool   `conf:"enableControllerMode"`
	ControllerAddr                  string `conf:"controllerAddr"`
	ControllerHeartBeatTimeoutMills int    `conf:"controllerHeartBeatTimeoutMills"`
	BrokerHeartbeatInterval         int    `conf:"brokerHeartbeatInterval"`
	ControllerJoinTimeoutMills      int    `conf:"controllerJoinTimeoutMills"`
	// The SyncStateSet a controller-mode master keeps (RocketMQ 5's keys):
	// a slave more than HaMaxTimeSlaveNotCatchup ms behind leaves it, one
	// caught up joins it. A SYNC_MASTER acknowledges a write once every
	// member has it (AllAckInSyncStateSet) or else once InSyncReplicas
	// replicas (the master counted) have it.
	HaMaxTimeSlaveNotCatchup int  `conf:"haMaxTimeSlaveNotCatchup"`
	InSyncReplicas           int  `conf:"inSyncReplicas"`
	AllAckInSyncStateSet     bool `conf:"allAckInSyncStateSet"`
	// ReadUnCommitted lets a controller-mode master serve (dispatch to
	// consume queues, the index and the delay, timer and transaction
	// services) what not every SyncStateSet member has yet. Off by
	// default, as RocketMQ 5: a failover may truncate such records, and a
	// consumer that had them would commit offsets past the new master's
	// end and skip what it stores there next.
	ReadUnCommitted bool `conf:"readUnCommitted"`
}

// DefaultOptions returns RocketMQ 4.9's defaults (Tide deviations are
// noted on the fields they affect: enablePropertyFilter is on, so SQL92
// subscriptions work out of the box).
func DefaultOptions() Options {
	host, _ := os.Hostname()
	if host == "" {
		host = "broker-a"
	}
	return Options{
		BrokerClusterName:               "DefaultCluster",
		BrokerName:                      host,
		BrokerID:                        0,
		BrokerRole:                      "ASYNC_MASTER",
		ListenPort:                      10911,
		BrokerIP1:                       defaultIP(),
		BrokerPermission:                6,
		Store:                           store.DefaultConfig(),
		AutoCreateTopicEnable:           true,
		AutoCreateSubscriptionGroup:     true,
		DefaultTopicQueueNums:           8,
		ClusterTopicEnable:              true,
		BrokerTopicEnable:               true,
		TraceOn:                         true,
		RegionID:                        "DefaultRegion",
		EnablePropertyFilter:            true,
		StoreReplyMessageEnable:         true,
		LongPollingEnable:               true,
		ShortPollingTimeMills:           1000,
		TransactionTimeOut:              6000,
		TransactionCheckInterval:        60000,
		TransactionCheckMax:             15,
		RegisterNameServerPeriod:        30000,
		RegisterBrokerTimeoutMills:      6000,
		FlushConsumerOffsetInterval:     5000,
		FlushDelayOffsetInterval:        10000,
		TimerMaxDelaySec:                3 * 24 * 3600,
		TideExtensions:                  true,
		ProducerIDExpirationMs:          7 * 24 * 3600 * 1000,
		ServerSocketMaxFrame:            16 << 20,
		ServerMaxConnections:            10000,
		ServerChannelMaxIdleTimeSeconds: 120,
		ServerMaxInFlightPerConn:        4096,
		ServerMaxHeaderSize:             256 << 10,
		ServerFrameReadTimeoutMillis:    60000,
		MaxHeldPullRequests:             10000,
		MaxHeldPullRequestsPerConn:      1024,
		ControllerHeartBeatTimeoutMills: 10000,
		BrokerHeartbeatInterval:         1000,
		ControllerJoinTimeoutMills:      30000,
		HaMaxTimeSlaveNotCatchup:        15000,
		InSyncReplicas:                  1,
	}
}

// defaultIP returns the first non-loopback IPv4 address of the host, or
// 127.0.0.1 (RocketMQ picks brokerIP1 the same way).
func defaultIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// ErrInvalidOptions wraps every Validate failure.
var ErrInvalidOptions = errors.New("invalid broker options")

// Validate checks the options and returns every problem found.
func (o *Options) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if o.BrokerClusterName == "" {
		bad("brokerClusterName is empty")
	}
	if o.BrokerName == "" {
		bad("brokerName is empty")
	}
	switch o.BrokerRole {
	case "ASYNC_MASTER", "SYNC_MASTER":
		if o.BrokerID != 0 && !o.EnableControllerMode {
			bad("brokerRole %s needs brokerId 0, got %d", o.BrokerRole, o.BrokerID)
		}
	case "SLAVE":
		if o.EnableControllerMode {
			bad("in controller mode brokerRole is the master flavour (ASYNC_MASTER or SYNC_MASTER); the controller makes a broker a slave")
		} else if o.BrokerID <= 0 {
			bad("brokerRole SLAVE needs brokerId > 0, got %d", o.BrokerID)
		}
	default:
		bad("brokerRole %q is not ASYNC_MASTER, SYNC_MASTER or SLAVE", o.BrokerRole)
	}
	if o.ProducerIDExpirationMs <= 0 {
		bad("producerIdExpirationMs %d is not positive", o.ProducerIDExpirationMs)
	}
	if o.ListenPort < 0 || o.ListenPort > 65535 {
		bad("listenPort %d is not a port", o.ListenPort)
	}
	if o.HAListenPort < 0 || o.HAListenPort > 65535 {
		bad("haListenPort %d is not a port", o.HAListenPort)
	}
	if n := len(o.HAAuthSecret); n > 0 && n < ha.MinSecretLen {
		bad("haAuthSecret has %d characters, at least %d needed", n, ha.MinSecretLen)
	}
	if ip := net.ParseIP(o.BrokerIP1); ip == nil || ip.To4() == nil {
		bad("brokerIP1 %q is not an IPv4 address (the official Go client only parses IPv4 message ids)", o.BrokerIP1)
	}
	for _, ns := range o.NameServers() {
		if _, _, err := net.SplitHostPort(ns); err != nil {
			bad("namesrvAddr entry %q is not host:port", ns)
		}
	}
	if err := o.Store.Validate(); err != nil {
		bad("%v", err)
	}
	if o.DefaultTopicQueueNums <= 0 || o.DefaultTopicQueueNums > 1024 {
		bad("defaultTopicQueueNums %d is not in 1..1024", o.DefaultTopicQueueNums)
	}
	if o.TransactionTimeOut <= 0 || o.TransactionCheckInterval <= 0 || o.TransactionCheckMax <= 0 {
		bad("transactionTimeOut, transactionCheckInterval and transactionCheckMax must be positive")
	}
	if o.RegisterNameServerPeriod <= 0 {
		bad("registerNameServerPeriod must be positive")
	}
	errs = append(errs, o.controllerModeProblems()...)
	errs = append(errs, o.securityProblems()...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(errs, "; "))
	}
	return nil
}

// NameServers returns the NameServer addresses of NamesrvAddr.
func (o *Options) NameServers() []string {
	var out []string
	for _, s := range strings.Split(o.NamesrvAddr, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsMaster reports whether the broker is a master.
func (o *Options) IsMaster() bool { return o.BrokerRole != "SLAVE" }

// Apply sets the options named by the keys of kv (broker.conf keys) and
// returns the keys it does not know, sorted, for the caller to warn about.
// A value that does not parse as its field's type is an error naming the
// key.
func (o *Options) Apply(kv map[string]string) (unknown []string, err error) {
	fields := map[string]reflect.Value{}
	v := reflect.ValueOf(o).Elem()
	for i := 0; i < v.NumField(); i++ {
		if tag := v.Type().Field(i).Tag.Get("conf"); tag != "" {
			for _, key := range strings.Split(tag, ",") { // name[,alias...]
				fields[key] = v.Field(i)
			}
		}
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := fields[k]
		if !ok {
			if serr := o.Store.Set(k, kv[k]); errors.Is(serr, store.ErrUnknownKey) {
				unknown = append(unknown, k)
			} else if serr != nil {
				return unknown, fmt.Errorf("%w: %v", ErrInvalidOptions, serr)
			}
			continue
		}
		raw := strings.TrimSpace(kv[k])
		switch f.Kind() {
		case reflect.String:
			f.SetString(raw)
		case reflect.Bool:
			b, perr := strconv.ParseBool(raw)
			if perr != nil {
				return unknown, fmt.Errorf("%w: %s=%q is not a boolean", ErrInvalidOptions, k, raw)
			}
			f.SetBool(b)
		case reflect.Int, reflect.Int32, reflect.Int64:
			n, perr := strconv.ParseInt(raw, 10, f.Type().Bits())
			if perr != nil {
				return unknown, fmt.Errorf("%w: %s=%q is not an integer", ErrInvalidOptions, k, raw)
			}
			f.SetInt(n)
		case reflect.Float64:
			x, perr := strconv.ParseFloat(raw, 64)
			if perr != nil {
				return unknown, fmt.Errorf("%w: %s=%q is not a number", ErrInvalidOptions, k, raw)
			}
			f.SetFloat(x)
		}
	}
	return unknown, nil
}

// HAHost is the host the HA port binds: haListenAddr if set, else
// listenAddr, else brokerIP2, else brokerIP1, the address slaves are
// told to dial. RocketMQ binds every interface; binding the broker's own
// address keeps the port off networks the broker does not serve (set
// haListenAddr=0.0.0.0 for the old behaviour).
func (o *Options) HAHost() string {
	for _, h := range []string{o.HAListenAddr, o.ListenAddr, o.BrokerIP2} {
		if h != "" {
			return h
		}
	}
	return o.BrokerIP1
}
