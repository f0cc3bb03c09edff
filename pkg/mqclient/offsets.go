package mqclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// offsetStore keeps a group's consume offsets ("next offset to consume").
type offsetStore interface {
	// read returns the stored offset of q, or -1 when none is stored.
	read(ctx context.Context, q Queue) (int64, error)
	// write stores off for q. forward asks a broker to keep a higher
	// offset it already has (see commitLocked); the local store has one
	// writer and ignores it.
	write(ctx context.Context, q Queue, off int64, forward bool) error
	// flush persists buffered writes (local store).
	flush()
}

// extSetZeroIfNotFound is RocketMQ 5's QueryConsumerOffsetRequestHeader
// field setZeroIfNotFound.
const extSetZeroIfNotFound = "setZeroIfNotFound"

// remoteOffsets stores offsets on the queue's broker (clustering).
type remoteOffsets struct{ pc *PushConsumer }

func (r *remoteOffsets) read(ctx context.Context, q Queue) (int64, error) {
	addr, err := r.pc.c.masterAddr(ctx, q.BrokerName, q.Topic)
	if err != nil {
		return 0, err
	}
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: r.pc.group, Topic: q.Topic, QueueID: q.QueueID}
	ext := h.Encode()
	// RocketMQ 5 brokers answer QUERY_NOT_FOUND for a group without an
	// offset only when asked to; 4.x brokers ignore the field and answer
	// 0 for queues that still hold their first message, which makes a new
	// group read such a queue from the start whatever ConsumeFrom says.
	ext[extSetZeroIfNotFound] = "false"
	resp, err := r.pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.QueryConsumerOffset, ext, nil), r.pc.s.requestTimeout)
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case protocol.Success:
		var oh protocol.OffsetResponseHeader
		if err := oh.Decode(resp.ExtFields); err != nil {
			return 0, err
		}
		return oh.Offset, nil
	case protocol.QueryNotFound:
		return -1, nil
	}
	return 0, fmt.Errorf("mqclient: query offset of %s: %w", q, resp.Err())
}

func (r *remoteOffsets) write(ctx context.Context, q Queue, off int64, forward bool) error {
	addr, err := r.pc.c.masterAddr(ctx, q.BrokerName, q.Topic)
	if err != nil {
		return err
	}
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: r.pc.group, Topic: q.Topic, QueueID: q.QueueID, CommitOffset: off, OnlyForward: forward}
	resp, err := r.pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.UpdateConsumerOffset, h.Encode(), nil), r.pc.s.requestTimeout)
	if err != nil {
		return err
	}
	return resp.Err()
}

func (r *remoteOffsets) flush() {}

// localOffsets stores offsets in a JSON file (broadcasting), written
// atomically (temporary file and rename) on flush.
type localOffsets struct {
	path  string
	mu    sync.Mutex
	m     map[string]int64 // Queue.Key() -> offset
	dirty bool
}

func newLocalOffsets(dir, group, instance string) (*localOffsets, error) {
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("mqclient: offset dir: %w", err)
		}
		dir = filepath.Join(home, ".tide_mqclient")
	}
	if instance == "" {
		instance = "default"
	}
	l := &localOffsets{path: filepath.Join(dir, group+"@"+instance+".offsets.json"), m: map[string]int64{}}
	b, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("mqclient: read offsets: %w", err)
	default:
		if err := json.Unmarshal(b, &l.m); err != nil {
			return nil, fmt.Errorf("mqclient: offsets file %s: %w", l.path, err)
		}
	}
	return l, nil
}

func (l *localOffsets) read(_ context.Context, q Queue) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.m[q.Key()]; ok {
		return v, nil
	}
	return -1, nil
}

func (l *localOffsets) write(_ context.Context, q Queue, off int64, _ bool) error {
	l.mu.Lock()
	l.m[q.Key()] = off
	l.dirty = true
	l.mu.Unlock()
	return nil
}

func (l *localOffsets) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dirty {
		return
	}
	b, _ := json.Marshal(l.m)
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, l.path); err == nil {
		l.dirty = false
	}
}
