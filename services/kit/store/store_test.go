package store

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

type redisConf struct {
	addr              string
	dial, read, write *durationpb.Duration
}

func (c redisConf) GetAddr() string                       { return c.addr }
func (c redisConf) GetPassword() string                   { return "pw" }
func (c redisConf) GetDb() int32                          { return 3 }
func (c redisConf) GetDialTimeout() *durationpb.Duration  { return c.dial }
func (c redisConf) GetReadTimeout() *durationpb.Duration  { return c.read }
func (c redisConf) GetWriteTimeout() *durationpb.Duration { return c.write }

// TestNewRedisOptions: unset timeouts take the defaults, set ones are
// kept, and every call is bounded by its context's deadline.
func TestNewRedisOptions(t *testing.T) {
	tests := []struct {
		name              string
		c                 redisConf
		dial, read, write time.Duration
	}{
		{"defaults", redisConf{addr: "r:6379"}, time.Second, 500 * time.Millisecond, 500 * time.Millisecond},
		{"set", redisConf{addr: "r:6379", dial: durationpb.New(2 * time.Second), read: durationpb.New(time.Second),
			write: durationpb.New(3 * time.Second)}, 2 * time.Second, time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRedis(tt.c)
			defer r.Close()
			o := r.Options()
			if o.Addr != "r:6379" || o.Password != "pw" || o.DB != 3 || !o.ContextTimeoutEnabled {
				t.Fatalf("options %+v", o)
			}
			if o.DialTimeout != tt.dial || o.ReadTimeout != tt.read || o.WriteTimeout != tt.write {
				t.Fatalf("timeouts %v/%v/%v, want %v/%v/%v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout, tt.dial, tt.read, tt.write)
			}
		})
	}
}
