// Package topic is the broker's topic configuration table: queue counts,
// permissions and filter type per topic, the system topics created at
// start, auto-creation from a template topic (TBW102), and the name rules.
// The table is persisted as config/topics.json in RocketMQ's shape
// (topicConfigTable + dataVersion); every change bumps the data version,
// which tells the NameServers to rebuild their routes.
package topic

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/broker/internal/jsonfile"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// System topic names.
const (
	AutoCreateTemplate = protocol.DefaultTopicTemplate
	SelfTest           = protocol.SelfTestTopic
	Benchmark          = protocol.BenchmarkTopic
	OffsetMovedEvent   = protocol.OffsetMovedEventTopic
	Schedule           = protocol.ScheduleTopic
	TransHalf          = protocol.TransHalfTopic
	TransOpHalf        = protocol.TransOpHalfTopic
	TransCheckMaxTime  = protocol.TransCheckMaxTimeTopic
	Trace              = protocol.TraceTopic
	RetryPrefix        = protocol.RetryTopicPrefix
	DLQPrefix          = protocol.DLQTopicPrefix
	ReplySuffix        = protocol.ReplyTopicSuffix
	// TimerTopic parks messages with an arbitrary delivery time (Tide's
	// timing wheel); like SCHEDULE_TOPIC_XXXX it is never sent to directly.
	TimerTopic = protocol.TimerTopic
)

// MaxNameLength is the longest topic name (its length field is one byte).
const MaxNameLength = 127

// Errors returned by the table.
var (
	// ErrInvalidName: the name breaks RocketMQ's topic name rules.
	ErrInvalidName = errors.New("invalid topic name")
	// ErrSystemTopic: the operation is not allowed on a system topic.
	ErrSystemTopic = errors.New("system topic")
	// ErrNotExist: the topic does not exist and cannot be auto-created.
	ErrNotExist = errors.New("topic does not exist")
)

// RetryTopic returns %RETRY%group.
func RetryTopic(group string) string { return RetryPrefix + group }

// DLQTopic returns %DLQ%group.
func DLQTopic(group string) string { return DLQPrefix + group }

// IsSendForbidden reports whether clients may not send to the topic
// directly (RocketMQ refuses these with NO_PERMISSION).
func IsSendForbidden(name string) bool {
	switch name {
	case Schedule, TransHalf, TransOpHalf, TransCheckMaxTime, SelfTest, OffsetMovedEvent, TimerTopic:
		return true
	}
	return false
}

// IsSystem reports whether the name is a broker system topic that
// UPDATE_AND_CREATE_TOPIC must not change.
func IsSystem(name string) bool {
	return IsSendForbidden(name) || name == AutoCreateTemplate || name == Benchmark || name == Trace
}

// ValidateName checks RocketMQ's topic name rules: non-blank, at most 127
// bytes, only [%|a-zA-Z0-9_-].
func ValidateName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: the topic name is blank", ErrInvalidName)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: %q is %d bytes long, the maximum is %d", ErrInvalidName, name, len(name), MaxNameLength)
	}
	if i := protocol.BadNameByte(name); i >= 0 {
		return fmt.Errorf("%w: %q contains %q; only [%%|a-zA-Z0-9_-] is allowed", ErrInvalidName, name, name[i])
	}
	return nil
}

// Options configures the system topics a table creates.
type Options struct {
	ClusterName           string
	BrokerName            string
	AutoCreateTopicEnable bool
	DefaultTopicQueueNums int32
	ClusterTopicEnable    bool
	BrokerTopicEnable     bool
	TraceTopicEnable      bool
	ScheduleQueueNums     int32 // number of delay levels
	Now                   func() time.Time
	// OnChange, if set, is called after every change of the data
	// version, with the table's lock held: it must not call the table.
	// (The broker wakes the slaves' metadata long polls with it.)
	OnChange func()
}

// Table is the topic table. It is safe for concurrent use.
type Table struct {
	path string
	opts Options

	mu      sync.RWMutex
	topics  map[string]protocol.TopicConfig
	version protocol.DataVersion
}

type file struct {
	TopicConfigTable map[string]protocol.TopicConfig `json:"topicConfigTable"`
	DataVersion      protocol.DataVersion            `json:"dataVersion"`
}

// Open loads the table from path and adds the system topics that are
// missing.
func Open(path string, opts Options) (*Table, error) {
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	t := &Table{path: path, opts: opts, topics: map[string]protocol.TopicConfig{}}
	var f file
	if _, err := jsonfile.Load(path, &f); err != nil {
		return nil, err
	}
	for name, tc := range f.TopicConfigTable {
		tc.TopicName = name
		t.topics[name] = tc
	}
	t.version = f.DataVersion
	t.addSystemTopics()
	if t.version.Timestamp == 0 {
		t.bump()
	}
	return t, nil
}

func (t *Table) addSystemTopics() {
	sys := func(name string, queues, perm int32) {
		if _, ok := t.topics[name]; !ok {
			t.topics[name] = protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: protocol.TopicFilterSingleTag}
		}
	}
	o := t.opts
	sys(SelfTest, 1, protocol.PermRead|protocol.PermWrite)
	if o.AutoCreateTopicEnable {
		n := o.DefaultTopicQueueNums
		if n <= 0 {
			n = 8
		}
		sys(AutoCreateTemplate, n, protocol.PermRead|protocol.PermWrite|protocol.PermInherit)
	}
	sys(Benchmark, 1024, protocol.PermRead|protocol.PermWrite)
	if o.ClusterName != "" {
		perm := protocol.PermInherit
		if o.ClusterTopicEnable {
			perm |= protocol.PermRead | protocol.PermWrite
		}
		sys(o.ClusterName, 16, perm)
		sys(o.ClusterName+ReplySuffix, 1, protocol.PermRead|protocol.PermWrite)
	}
	if o.BrokerName != "" {
		perm := protocol.PermInherit
		if o.BrokerTopicEnable {
			perm |= protocol.PermRead | protocol.PermWrite
		}
		sys(o.BrokerName, 1, perm)
	}
	sys(OffsetMovedEvent, 1, protocol.PermRead|protocol.PermWrite)
	levels := o.ScheduleQueueNums
	if levels <= 0 {
		levels = 18
	}
	sys(Schedule, levels, protocol.PermRead|protocol.PermWrite)
	if o.TraceTopicEnable {
		sys(Trace, 1, protocol.PermRead|protocol.PermWrite)
	}
	sys(TransHalf, 1, protocol.PermRead|protocol.PermWrite)
	sys(TransOpHalf, 1, protocol.PermRead|protocol.PermWrite)
}

// bump advances the data version. Caller holds the write lock (or owns t).
func (t *Table) bump() {
	t.version.Counter++
	t.version.Timestamp = t.opts.Now().UnixMilli()
	if t.opts.OnChange != nil {
		t.opts.OnChange()
	}
}

// Get returns a topic's config.
func (t *Table) Get(name string) (protocol.TopicConfig, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tc, ok := t.topics[name]
	return tc, ok
}

// Put creates or replaces a topic's config and persists the table. It
// refuses invalid names; system topics are refused unless system is true
// (the broker's own retry/DLQ/system creations).
func (t *Table) Put(tc protocol.TopicConfig, system bool) error {
	if err := ValidateName(tc.TopicName); err != nil {
		return err
	}
	if !system && IsSystem(tc.TopicName) {
		return fmt.Errorf("%w: %q is a system topic and cannot be changed", ErrSystemTopic, tc.TopicName)
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterSingleTag
	}
	t.mu.Lock()
	if old, ok := t.topics[tc.TopicName]; ok && old == tc {
		t.mu.Unlock()
		return nil
	}
	tc.TopicName = strings.Clone(tc.TopicName) // see create
	t.topics[tc.TopicName] = tc
	t.bump()
	t.mu.Unlock()
	return t.Persist()
}

// Delete removes a topic and persists the table. It returns false when the
// topic did not exist.
func (t *Table) Delete(name string) (bool, error) {
	t.mu.Lock()
	if _, ok := t.topics[name]; !ok {
		t.mu.Unlock()
		return false, nil
	}
	delete(t.topics, name)
	t.bump()
	t.mu.Unlock()
	return true, t.Persist()
}

// CreateOnSend returns the config of topic, creating it from the template
// topic defaultTopic when it is missing, as RocketMQ does for the first send
// to a new topic: the template must exist and have the inherit bit; the new
// topic gets min(queueNums, template write queues) queues and the
// template's perm minus inherit. Retry topics are created with 1 queue.
// created tells whether the topic was new (the caller re-registers with the
// NameServers).
func (t *Table) CreateOnSend(name, defaultTopic string, queueNums int32) (tc protocol.TopicConfig, created bool, err error) {
	if tc, ok := t.Get(name); ok {
		return tc, false, nil
	}
	if err := ValidateName(name); err != nil {
		return tc, false, err
	}
	if strings.HasPrefix(name, RetryPrefix) {
		return t.CreateSystem(name, 1, protocol.PermRead|protocol.PermWrite)
	}
	tmpl, ok := t.Get(defaultTopic)
	if !ok || defaultTopic == "" {
		return tc, false, fmt.Errorf("%w: topic %q is not on this broker and the auto-create template %q is missing (autoCreateTopicEnable=false?)", ErrNotExist, name, defaultTopic)
	}
	if !protocol.PermInheritable(tmpl.Perm) {
		return tc, false, fmt.Errorf("%w: topic %q is not on this broker and template %q does not allow inheritance", ErrNotExist, name, defaultTopic)
	}
	n := queueNums
	if n <= 0 || n > tmpl.WriteQueueNums {
		n = tmpl.WriteQueueNums
	}
	tc = protocol.TopicConfig{TopicName: name, ReadQueueNums: n, WriteQueueNums: n, Perm: tmpl.Perm &^ protocol.PermInherit, TopicFilterType: tmpl.TopicFilterType}
	return t.create(tc)
}

// CreateSystem returns the config of a broker-managed topic (retry, DLQ,
// transaction check), creating it with the given queues and perm when it is
// missing.
func (t *Table) CreateSystem(name string, queues, perm int32) (protocol.TopicConfig, bool, error) {
	if tc, ok := t.Get(name); ok {
		return tc, false, nil
	}
	return t.create(protocol.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm, TopicFilterType: protocol.TopicFilterSingleTag})
}

func (t *Table) create(tc protocol.TopicConfig) (protocol.TopicConfig, bool, error) {
	t.mu.Lock()
	if old, ok := t.topics[tc.TopicName]; ok { // lost a race with another creator
		t.mu.Unlock()
		return old, false, nil
	}
	// The name often comes sliced from a request's decoded header; a copy
	// keeps the table (and the send path, which uses the table's name as
	// the key of per-queue state) from holding whole headers.
	tc.TopicName = strings.Clone(tc.TopicName)
	t.topics[tc.TopicName] = tc
	t.bump()
	t.mu.Unlock()
	return tc, true, t.Persist()
}

// Names returns every topic name, sorted.
func (t *Table) Names() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.topics))
	for n := range t.topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Wrapper returns the whole table with its data version (the body of a
// NameServer registration).
func (t *Table) Wrapper() protocol.TopicConfigSerializeWrapper {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := make(map[string]protocol.TopicConfig, len(t.topics))
	for k, v := range t.topics {
		m[k] = v
	}
	return protocol.TopicConfigSerializeWrapper{TopicConfigTable: m, DataVersion: t.version}
}

// DataVersion returns the current data version.
func (t *Table) DataVersion() protocol.DataVersion {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// Replace installs a table received from a master (slave metadata sync).
func (t *Table) Replace(w protocol.TopicConfigSerializeWrapper) error {
	t.mu.Lock()
	t.topics = make(map[string]protocol.TopicConfig, len(w.TopicConfigTable))
	for k, v := range w.TopicConfigTable {
		v.TopicName = k
		t.topics[k] = v
	}
	t.version = w.DataVersion
	t.mu.Unlock()
	return t.Persist()
}

// Persist writes the table to its file.
func (t *Table) Persist() error {
	w := t.Wrapper()
	return jsonfile.Save(t.path, file{TopicConfigTable: w.TopicConfigTable, DataVersion: w.DataVersion})
}
