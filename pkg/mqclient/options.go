package mqclient

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Option configures a Client, Producer, PushConsumer, PullConsumer or
// Admin. Options that do not apply to the client they are given to are
// ignored (with WithClient, a member ignores the options marked "All
// clients" too: its Client's apply); each option's comment
// says where it applies. Defaults are listed in defaultSettings and in each
// option's comment.
type Option func(*settings)

// MessageModel says how a consumer group shares a topic's messages.
type MessageModel int

const (
	// Clustering: each message goes to one member of the group; offsets
	// are stored on the broker. The default.
	Clustering MessageModel = iota
	// Broadcasting: each member gets every message; offsets are stored in
	// a local file (WithOffsetDir) and failed messages are not retried
	// through the broker.
	Broadcasting
)

// ConsumeFrom says where a group with no stored offset starts in a queue.
type ConsumeFrom int

const (
	// ConsumeFromLast starts at the end of the queue (only new messages).
	// The default. RocketMQ 4.x brokers (Tide's included, today) answer
	// offset 0 instead of "none" for a new group on a queue that still
	// holds its first message, so such a queue is read from the start
	// whatever ConsumeFrom says; the client asks RocketMQ 5 brokers not to
	// (setZeroIfNotFound=false).
	ConsumeFromLast ConsumeFrom = iota
	// ConsumeFromFirst starts at the oldest message still stored.
	ConsumeFromFirst
	// ConsumeFromTimestamp starts at the first message stored at or after
	// the time given with WithConsumeTimestamp.
	ConsumeFromTimestamp
)

// settings holds every option. defaultSettings is the one place defaults
// live.
type settings struct {
	client       *Client // WithClient; nil: the member builds a private one
	nameServers  []string
	logger       *slog.Logger
	instanceName string
	clientIP     string
	credentials  Credentials // credentials.go
	tlsConfig    *tls.Config
	jsonHeaders  bool // WithJSONHeaders

	// timing
	requestTimeout    time.Duration
	routeRefresh      time.Duration
	routeRetryGap     time.Duration // least time between two on-demand refreshes of one topic's route
	heartbeatInterval time.Duration

	// producer
	producerTopics []string
	producerGroup  string
	sendTimeout    time.Duration
	retries        int
	selector       QueueSelector
	compressOver   int
	maxMessageSize int
	interceptors   []SendInterceptor
	faultIsolation bool
	autoCreate     bool
	idempotence    bool          // idempotence.go
	stableInstance string        // WithStableProducerID
	linger         time.Duration // WithAutoBatch; 0: off
	batchBytes     int

	// consumer
	model             MessageModel
	from              ConsumeFrom
	fromTimestamp     time.Time
	allocate          AllocateStrategy
	concurrency       int
	pullBatchSize     int
	consumeBatchSize  int
	maxCachedCount    int
	maxCachedBytes    int
	maxReconsumeTimes int
	ordered           bool
	retryBackoff      time.Duration
	maxRetryBackoff   time.Duration
	rebalanceInterval time.Duration
	commitInterval    time.Duration
	lockInterval      time.Duration
	offsetDir         string
	middleware        []Middleware
	pollTimeout       time.Duration
	pullBackoff       time.Duration
}

func defaultSettings() settings {
	return settings{
		logger:            slog.Default(),
		requestTimeout:    3 * time.Second,
		routeRefresh:      30 * time.Second,
		routeRetryGap:     300 * time.Millisecond,
		heartbeatInterval: 30 * time.Second,

		producerGroup:  "DEFAULT_PRODUCER",
		sendTimeout:    3 * time.Second,
		retries:        2,
		compressOver:   4096,
		maxMessageSize: 4 << 20,
		faultIsolation: true,
		autoCreate:     true,
		idempotence:    true,
		linger:         time.Millisecond,

		model:             Clustering,
		from:              ConsumeFromLast,
		allocate:          AllocateAveragely(),
		concurrency:       20,
		pullBatchSize:     32,
		consumeBatchSize:  1,
		maxCachedCount:    1024,
		maxCachedBytes:    64 << 20,
		maxReconsumeTimes: 16,
		retryBackoff:      time.Second,
		maxRetryBackoff:   30 * time.Second,
		rebalanceInterval: 20 * time.Second,
		commitInterval:    5 * time.Second,
		lockInterval:      20 * time.Second,
		pollTimeout:       20 * time.Second,
		pullBackoff:       3 * time.Second,
	}
}

func (s *settings) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	switch {
	case len(s.nameServers) == 0:
		return bad("no name server address (WithNameServers)")
	case s.requestTimeout <= 0 || s.sendTimeout <= 0:
		return bad("timeouts must be positive")
	case s.routeRefresh <= 0 || s.heartbeatInterval <= 0 || s.rebalanceInterval <= 0 || s.commitInterval <= 0 || s.lockInterval <= 0:
		return bad("intervals must be positive")
	case s.retries < 0:
		return bad("retries %d < 0", s.retries)
	case !validName(s.producerGroup) || len(s.producerGroup) > 255:
		return bad("producer group %q: only [%%|a-zA-Z0-9_-], at most 255 bytes", s.producerGroup)
	case s.concurrency <= 0:
		return bad("concurrency %d <= 0", s.concurrency)
	case s.pullBatchSize <= 0 || s.pullBatchSize > 1024:
		return bad("pull batch size %d not in [1, 1024]", s.pullBatchSize)
	case s.consumeBatchSize <= 0 || s.consumeBatchSize > 1024:
		return bad("consume batch size %d not in [1, 1024]", s.consumeBatchSize)
	case s.maxCachedCount <= 0 || s.maxCachedBytes <= 0:
		return bad("cache limits must be positive")
	case s.maxMessageSize <= 0:
		return bad("max message size must be positive")
	case s.linger < 0 || s.batchBytes < 0:
		return bad("auto-batch linger %v and size %d must not be negative", s.linger, s.batchBytes)
	case s.allocate == nil:
		return bad("nil allocation strategy")
	case s.from == ConsumeFromTimestamp && s.fromTimestamp.IsZero():
		return bad("ConsumeFromTimestamp needs WithConsumeTimestamp")
	case s.model == Broadcasting && s.ordered:
		return bad("ordered consumption needs the Clustering model")
	}
	for _, a := range s.nameServers {
		if a == "" || strings.ContainsAny(a, " \t") {
			return bad("name server address %q", a)
		}
	}
	return nil
}

// memberSettings applies opts for a Producer, consumer or Admin and
// returns them with the Client the member runs on: WithClient's, whose
// client-wide settings then replace the member's, or a new private one.
func memberSettings(opts []Option) (settings, *Client, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if s.client != nil {
		s.useClient(&s.client.s)
	}
	if err := s.validate(); err != nil {
		return s, nil, err
	}
	if s.client != nil {
		return s, s.client, nil
	}
	c := newClient(s)
	c.private = true
	return s, c, nil
}

// useClient copies the client-wide settings of a shared Client (the
// options marked "All clients", except the logger and request timeout,
// which stay the member's own).
func (s *settings) useClient(cs *settings) {
	s.nameServers, s.instanceName, s.clientIP = cs.nameServers, cs.instanceName, cs.clientIP
	s.credentials, s.tlsConfig = cs.credentials, cs.tlsConfig
	s.routeRefresh, s.routeRetryGap, s.heartbeatInterval = cs.routeRefresh, cs.routeRetryGap, cs.heartbeatInterval
}

// WithClient makes a Producer, PushConsumer, PullConsumer or Admin run on
// the shared Client c (its connections, routes, heartbeat and client id)
// instead of a private one; the member then ignores the options marked
// "All clients" except WithLogger and WithRequestTimeout. See Client for
// the lifecycle.
func WithClient(c *Client) Option { return func(s *settings) { s.client = c } }

// WithNameServers sets the NameServer addresses ("host:port"; an
// "http://" prefix and ";"-separated lists are accepted). Required. All
// clients.
func WithNameServers(addrs ...string) Option {
	return func(s *settings) {
		s.nameServers = nil
		for _, a := range addrs {
			for _, p := range strings.Split(a, ";") {
				p = strings.TrimPrefix(strings.TrimSpace(p), "http://")
				if p != "" {
					s.nameServers = append(s.nameServers, p)
				}
			}
		}
	}
}

// WithLogger sets the logger. Default slog.Default(). All clients.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) {
		if l != nil {
			s.logger = l
		}
	}
}

// WithInstanceName sets the instance part of the client id
// ("ip@instance"). Two clients of one group in one process must have
// different ids; the default is the process id plus a random suffix, which
// is unique. All clients.
func WithInstanceName(name string) Option { return func(s *settings) { s.instanceName = name } }

// WithClientIP sets the IP put into the client id and message ids. Default:
// the first non-loopback IPv4 address of the host. All clients.
func WithClientIP(ip string) Option { return func(s *settings) { s.clientIP = ip } }

// WithJSONHeaders makes the client send JSON request headers, as
// rocketmq-client-go does, instead of the ROCKETMQ binary header
// (serialize type 1, Java RocketMQSerializable) it sends by default. Tide
// and Apache RocketMQ brokers and NameServers (4.x and 5.x) decode both
// and answer in the type the request came in; the binary header is
// smaller and cheaper to encode and decode (docs/benchmarks/analysis.md,
// "Binary ROCKETMQ header"). Use it for a peer that only reads JSON (a
// proxy or recorder that parses frames), or to compare. All clients.
func WithJSONHeaders() Option { return func(s *settings) { s.jsonHeaders = true } }

// WithRequestTimeout bounds each request other than sends and pulls
// (route queries, heartbeats, offsets, locks, admin calls). Default 3 s.
// All clients.
func WithRequestTimeout(d time.Duration) Option { return func(s *settings) { s.requestTimeout = d } }

// WithRouteRefreshInterval sets how often routes are refreshed from the
// NameServers. Default 30 s. All clients.
func WithRouteRefreshInterval(d time.Duration) Option {
	return func(s *settings) { s.routeRefresh = d }
}

// WithHeartbeatInterval sets how often the client heartbeats every broker.
// Default 30 s (brokers expire clients silent for 120 s). All clients.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(s *settings) { s.heartbeatInterval = d }
}

// WithProducerGroup sets the producer group. It matters for transaction
// check-backs. Default "DEFAULT_PRODUCER". Producer.
func WithProducerGroup(g string) Option { return func(s *settings) { s.producerGroup = g } }

// WithTopics names the topics a producer will send to. Start fetches their
// routes and heartbeats their brokers at once, so a transactional producer
// receives check-backs for half messages of an earlier instance of its
// group before it sends anything itself (a restarted service). Unknown
// topics are logged, not fatal. Default: none (brokers are learned on the
// first send).
func WithTopics(topics ...string) Option {
	return func(s *settings) { s.producerTopics = append(s.producerTopics, topics...) }
}

// WithSendTimeout bounds each send attempt. Default 3 s. Producer.
func WithSendTimeout(d time.Duration) Option { return func(s *settings) { s.sendTimeout = d } }

// WithRetries sets how many times a failed synchronous or oneway send is
// retried (so 1+n attempts). Retries go to another broker when there is
// one, except for messages with a ShardingKey, which stay on their queue
// to keep their order. Asynchronous sends retry the same way. Default 2.
// Producer.
func WithRetries(n int) Option { return func(s *settings) { s.retries = n } }

// WithQueueSelector replaces the default queue selection (hash of
// Message.ShardingKey when set, round robin otherwise). Producer.
func WithQueueSelector(q QueueSelector) Option { return func(s *settings) { s.selector = q } }

// WithCompressOver compresses (zlib) single-message bodies of at least n
// bytes; 0 disables compression. Default 4096, as RocketMQ. Producer.
func WithCompressOver(n int) Option { return func(s *settings) { s.compressOver = n } }

// WithMaxMessageSize sets the largest body (single message) or batch body
// the producer sends; larger ones fail with ErrInvalidMessage before
// anything is sent. Default 4 MiB, the broker default. Producer.
func WithMaxMessageSize(n int) Option { return func(s *settings) { s.maxMessageSize = n } }

// WithSendInterceptors adds interceptors run around every send, in order
// (see SendInterceptor). Producer.
func WithSendInterceptors(is ...SendInterceptor) Option {
	return func(s *settings) { s.interceptors = append(s.interceptors, is...) }
}

// WithIdempotence switches idempotent sends (default on; see
// idempotence.go and docs/broker.md "Idempotent sends"): the producer
// stamps every message with a producer id, epoch and per-queue sequence,
// and a Tide broker stores a retried message only once. Against a broker
// without the feature (Apache RocketMQ, or a Tide broker with
// tideExtensions=false) the producer sends plain messages either way.
func WithIdempotence(on bool) Option { return func(s *settings) { s.idempotence = on } }

// WithAutoBatch sets the auto-batching of SendAsync and of concurrent
// Send calls (autobatch.go): messages to the same queue go in one batch
// request (SEND_BATCH_MESSAGE), sent at once when nothing of the producer
// is in flight to that queue's broker (so a producer that sends rarely,
// or a single goroutine calling Send, waits for nothing), else when a
// request in flight to the broker ends (and none to the queue is
// left), when the batch holds maxBytes (encoded; 0 means 32 KiB, capped
// at WithMaxMessageSize), or linger after its first message, whichever
// comes first (RocketMQ 5's autoBatch, Kafka's
// linger.ms and batch.size). A topic whose batches keep leaving with
// about one message (sends spread over many topics) stops waiting: its
// messages go at once, alone, until a batch gathers several again. Each
// SendAsync and each Send still gets its own result (MsgID,
// OffsetMsgID, QueueOffset, and the status of the batch's answer:
// SEND_OK only after the broker flushed or replicated the whole batch as
// its flushDiskType and brokerRole require) or the batch's
// error; a batch is retried whole and, with idempotent sends, stored
// once. Delayed, timer and compressed messages are sent alone; SendTo,
// SendBatch, SendOneway and transactions are never auto-batched. A
// linger of 0 turns it off. Default on, linger 1 ms, 32 KiB: with 64
// SendAsync in flight it carried 2.4-2.8x the messages per second at a
// third of the CPU per message, and a producer sending 500 msgs/s saw no
// added latency (docs/benchmarks/analysis.md, "Levers"). Producer.
func WithAutoBatch(linger time.Duration, maxBytes int) Option {
	return func(s *settings) { s.linger, s.batchBytes = linger, maxBytes }
}

// WithStableProducerID makes the producer's id stable: derived from its
// producer group and instance, the same after a restart, with a new epoch
// each time. Starting the producer again fences the previous instance: a
// broker refuses its sends with ErrProducerFenced from the moment the new
// one obtained its id. Give each replica of an application its own stable
// instance (for example its pod name); two live producers with the same
// group and instance fence each other.
func WithStableProducerID(instance string) Option {
	return func(s *settings) { s.stableInstance = instance }
}

// WithFaultIsolation switches broker failure isolation: a broker that
// failed or answered slowly is avoided for a while when another one can
// take the message, and a master address whose send timed out or could
// not be dialled is not sent to again for up to the send timeout while
// the NameServers may name its successor (a failover). Default on.
// Producer.
func WithFaultIsolation(on bool) Option { return func(s *settings) { s.faultIsolation = on } }

// WithAutoCreateTopic lets the producer send to a topic no NameServer
// knows, through the brokers serving the auto-creation template TBW102
// (the broker then creates the topic). Default on. Producer.
func WithAutoCreateTopic(on bool) Option { return func(s *settings) { s.autoCreate = on } }

// WithMessageModel sets Clustering (default) or Broadcasting. Consumer.
func WithMessageModel(m MessageModel) Option { return func(s *settings) { s.model = m } }

// WithConsumeFrom sets where a group without a stored offset starts.
// Default ConsumeFromLast. Consumer.
func WithConsumeFrom(f ConsumeFrom) Option { return func(s *settings) { s.from = f } }

// WithConsumeTimestamp sets the start time for ConsumeFromTimestamp (and
// selects it). Consumer.
func WithConsumeTimestamp(t time.Time) Option {
	return func(s *settings) { s.from, s.fromTimestamp = ConsumeFromTimestamp, t }
}

// WithAllocateStrategy sets how a clustering group splits queues. Default
// AllocateAveragely (identical to RocketMQ's, so mixed Java/Go groups
// agree). Consumer.
func WithAllocateStrategy(a AllocateStrategy) Option { return func(s *settings) { s.allocate = a } }

// WithConcurrency sets the number of handler goroutines. Default 20.
// Consumer.
func WithConcurrency(n int) Option { return func(s *settings) { s.concurrency = n } }

// WithPullBatchSize sets the most messages asked for per pull. Default 32.
// Consumer.
func WithPullBatchSize(n int) Option { return func(s *settings) { s.pullBatchSize = n } }

// WithConsumeBatchSize sets the most messages a BatchHandler gets per call
// (RocketMQ's consumeMessageBatchMaxSize), at most 1024. Batches are cut
// from one pull, so WithPullBatchSize bounds them too. Handlers registered
// with Subscribe always get one message. Default 1. Consumer.
func WithConsumeBatchSize(n int) Option { return func(s *settings) { s.consumeBatchSize = n } }

// WithFlowControl bounds the messages (count and body bytes) held per
// queue, pulled but not yet finished; pulling pauses above them. Defaults
// 1024 messages and 64 MiB. Consumer.
func WithFlowControl(maxCount, maxBytes int) Option {
	return func(s *settings) { s.maxCachedCount, s.maxCachedBytes = maxCount, maxBytes }
}

// WithMaxReconsumeTimes sets how many times a failing message is
// redelivered before it goes to the group's dead-letter queue
// (%DLQ%group). Concurrent consumers retry through the broker's retry
// topic; ordered consumers retry in place. Default 16. Consumer.
func WithMaxReconsumeTimes(n int) Option { return func(s *settings) { s.maxReconsumeTimes = n } }

// WithOrdered switches to ordered consumption: each queue is locked at the
// broker, messages with the same key (Message.ShardingKey, else the first
// of Keys, else the empty key) are handled one at a time in queue order,
// different keys in parallel. A failing message is retried in place with
// backoff (WithRetryBackoff) and blocks only its key; after
// WithMaxReconsumeTimes attempts it goes to the DLQ and its key moves on.
// Consumer, Clustering only.
func WithOrdered() Option { return func(s *settings) { s.ordered = true } }

// WithRetryBackoff sets the first and the largest wait between local
// retries of a failing message (doubling in between). Defaults 1 s and
// 30 s. Consumer.
func WithRetryBackoff(first, max time.Duration) Option {
	return func(s *settings) { s.retryBackoff, s.maxRetryBackoff = first, max }
}

// WithRebalanceInterval sets the periodic rebalance (rebalances also run
// when the broker reports a membership change). Default 20 s. Consumer.
func WithRebalanceInterval(d time.Duration) Option {
	return func(s *settings) { s.rebalanceInterval = d }
}

// WithCommitInterval sets how often consumed offsets are committed.
// Default 5 s. Consumer.
func WithCommitInterval(d time.Duration) Option { return func(s *settings) { s.commitInterval = d } }

// WithLockInterval sets how often ordered consumers renew their broker
// queue locks (which last 60 s on the broker). Default 20 s. Consumer.
func WithLockInterval(d time.Duration) Option { return func(s *settings) { s.lockInterval = d } }

// WithOffsetDir sets the directory of the local offset file of
// broadcasting consumers. Default $HOME/.tide_mqclient. Consumer.
func WithOffsetDir(dir string) Option { return func(s *settings) { s.offsetDir = dir } }

// WithMiddleware wraps every handler of the consumer, the first given
// outermost. Consumer.
func WithMiddleware(m ...Middleware) Option {
	return func(s *settings) { s.middleware = append(s.middleware, m...) }
}

// WithPollTimeout sets how long the broker may hold an empty pull (long
// polling). Default 20 s. Consumer.
func WithPollTimeout(d time.Duration) Option { return func(s *settings) { s.pollTimeout = d } }
