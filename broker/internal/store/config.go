package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Flush disk types (flushDiskType).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Config holds the store settings under RocketMQ's broker.conf key names
// (the conf tag). Durations keep RocketMQ's units: milliseconds unless the
// name says otherwise; fileReservedTime is in hours; ratios are percents.
type Config struct {
	StorePathRootDir      string `conf:"storePathRootDir"`
	StorePathCommitLog    string `conf:"storePathCommitLog"`    // default <root>/commitlog
	StorePathConsumeQueue string `conf:"storePathConsumeQueue"` // default <root>/consumequeue
	StorePathIndex        string `conf:"storePathIndex"`        // default <root>/index
	StoreCheckpoint       string `conf:"storeCheckpoint"`       // default <root>/checkpoint
	AbortFile             string `conf:"abortFile"`             // default <root>/abort

	MappedFileSizeCommitLog    int64 `conf:"mappedFileSizeCommitLog"`    // bytes, default 1 GiB
	MappedFileSizeConsumeQueue int64 `conf:"mappedFileSizeConsumeQueue"` // bytes, default 300000 units x 20
	WarmMapedFileEnable        bool  `conf:"warmMapedFileEnable"`        // zero-fill new segments before use (see the segment package comment)
	CommitLogPretouchAhead     int64 `conf:"commitLogPretouchAhead"`     // Tide: bytes past the commit log's end kept prefaulted (ASYNC_FLUSH); 0 = off

	FlushDiskType                     string `conf:"flushDiskType"`                     // ASYNC_FLUSH or SYNC_FLUSH
	FlushIntervalCommitLog            int    `conf:"flushIntervalCommitLog"`            // ms, async flush period
	FlushCommitLogLeastPages          int    `conf:"flushCommitLogLeastPages"`          // 4 KiB pages
	FlushCommitLogThoroughInterval    int    `conf:"flushCommitLogThoroughInterval"`    // ms
	FlushIntervalConsumeQueue         int    `conf:"flushIntervalConsumeQueue"`         // ms, also the checkpoint period
	FlushConsumeQueueLeastPages       int    `conf:"flushConsumeQueueLeastPages"`       // pages
	FlushConsumeQueueThoroughInterval int    `conf:"flushConsumeQueueThoroughInterval"` // ms
	SyncFlushTimeout                  int    `conf:"syncFlushTimeout"`                  // ms

	FileReservedTime            int    `conf:"fileReservedTime"`            // hours
	DeleteWhen                  string `conf:"deleteWhen"`                  // hours of day, "04" or "04;05"
	DiskMaxUsedSpaceRatio       int    `conf:"diskMaxUsedSpaceRatio"`       // percent: delete expired files at any hour above it
	DiskSpaceCleanForciblyRatio int    `conf:"diskSpaceCleanForciblyRatio"` // percent: delete oldest files even if not expired
	DiskSpaceWarningLevelRatio  int    `conf:"diskSpaceWarningLevelRatio"`  // percent: refuse writes above it
	CleanResourceInterval       int    `conf:"cleanResourceInterval"`       // ms
	DeleteFileBatchMax          int    `conf:"deleteFileBatchMax"`          // segments per cleaning round

	MaxMessageSize                    int    `conf:"maxMessageSize"` // bytes of a whole stored record
	MessageDelayLevel                 string `conf:"messageDelayLevel"`
	MessageIndexEnable                bool   `conf:"messageIndexEnable"`
	MaxHashSlotNum                    int    `conf:"maxHashSlotNum"`
	MaxIndexNum                       int    `conf:"maxIndexNum"`
	MaxTransferBytesOnMessageInMemory int    `conf:"maxTransferBytesOnMessageInMemory"`
	MaxTransferCountOnMessageInMemory int    `conf:"maxTransferCountOnMessageInMemory"`
	CheckCRCOnRecover                 bool   `conf:"checkCRCOnRecover"`
}

// DefaultConfig returns RocketMQ's defaults with the store under ~/store.
func DefaultConfig() Config {
	root := "store"
	if h, err := os.UserHomeDir(); err == nil {
		root = filepath.Join(h, "store")
	}
	return Config{
		StorePathRootDir:                  root,
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * 20,
		WarmMapedFileEnable:               false,
		CommitLogPretouchAhead:            1 << 20,
		FlushDiskType:                     AsyncFlush,
		FlushIntervalCommitLog:            500,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10000,
		FlushIntervalConsumeQueue:         1000,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60000,
		SyncFlushTimeout:                  5000,
		FileReservedTime:                  72,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		DiskSpaceCleanForciblyRatio:       85,
		DiskSpaceWarningLevelRatio:        90,
		CleanResourceInterval:             10000,
		DeleteFileBatchMax:                10,
		MaxMessageSize:                    4 << 20,
		MessageDelayLevel:                 "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5000000,
		MaxIndexNum:                       20000000,
		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInMemory: 32,
		CheckCRCOnRecover:                 true,
	}
}

// Set assigns the setting named by its broker.conf key. Unknown keys give
// ErrUnknownKey, so a broker can pass through keys that are not the
// store's.
func (c *Config) Set(key, value string) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("conf") != key {
			continue
		}
		f := v.Field(i)
		value = strings.TrimSpace(value)
		switch f.Kind() {
		case reflect.String:
			f.SetString(value)
		case reflect.Bool:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("store config %s=%q: %w", key, value, err)
			}
			f.SetBool(b)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return fmt.Errorf("store config %s=%q: %w", key, value, err)
			}
			f.SetInt(n)
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnknownKey, key)
}

// Validate checks the settings and returns every problem found.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.StorePathRootDir == "" {
		bad("storePathRootDir is empty")
	}
	if c.MappedFileSizeCommitLog < 4096 || c.MappedFileSizeCommitLog > 1<<40 {
		bad("mappedFileSizeCommitLog %d out of range [4096, 1 TiB]", c.MappedFileSizeCommitLog)
	}
	if c.CommitLogPretouchAhead < 0 || c.CommitLogPretouchAhead > 1<<30 {
		bad("commitLogPretouchAhead %d out of range [0, 1 GiB]", c.CommitLogPretouchAhead) // more than a segment is capped at one
	}
	if c.MappedFileSizeConsumeQueue < 20 || c.MappedFileSizeConsumeQueue%20 != 0 {
		bad("mappedFileSizeConsumeQueue %d is not a positive multiple of 20", c.MappedFileSizeConsumeQueue)
	}
	if c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush {
		bad("flushDiskType %q is neither %s nor %s", c.FlushDiskType, AsyncFlush, SyncFlush)
	}
	for _, p := range []struct {
		name string
		v    int
	}{
		{"flushIntervalCommitLog", c.FlushIntervalCommitLog}, {"flushIntervalConsumeQueue", c.FlushIntervalConsumeQueue},
		{"syncFlushTimeout", c.SyncFlushTimeout}, {"cleanResourceInterval", c.CleanResourceInterval},
		{"maxMessageSize", c.MaxMessageSize}, {"flushCommitLogThoroughInterval", c.FlushCommitLogThoroughInterval},
		{"deleteFileBatchMax", c.DeleteFileBatchMax},
	} {
		if p.v <= 0 {
			bad("%s %d must be positive", p.name, p.v)
		}
	}
	if c.FlushCommitLogLeastPages < 0 || c.FlushConsumeQueueLeastPages < 0 {
		bad("flush least pages must not be negative")
	}
	if int64(c.MaxMessageSize)+8 > c.MappedFileSizeCommitLog {
		bad("maxMessageSize %d does not fit a commit log segment of %d", c.MaxMessageSize, c.MappedFileSizeCommitLog)
	}
	if c.FileReservedTime <= 0 {
		bad("fileReservedTime %d must be positive", c.FileReservedTime)
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		errs = append(errs, err)
	}
	for _, r := range []struct {
		name string
		v    int
	}{
		{"diskMaxUsedSpaceRatio", c.DiskMaxUsedSpaceRatio}, {"diskSpaceCleanForciblyRatio", c.DiskSpaceCleanForciblyRatio},
		{"diskSpaceWarningLevelRatio", c.DiskSpaceWarningLevelRatio},
	} {
		if r.v < 1 || r.v > 100 {
			bad("%s %d is not a percent in [1, 100]", r.name, r.v)
		}
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		errs = append(errs, err)
	}
	if c.MessageIndexEnable && (c.MaxHashSlotNum <= 0 || c.MaxIndexNum <= 1) {
		bad("maxHashSlotNum %d / maxIndexNum %d too small", c.MaxHashSlotNum, c.MaxIndexNum)
	}
	if c.MaxTransferBytesOnMessageInMemory <= 0 || c.MaxTransferCountOnMessageInMemory <= 0 {
		bad("maxTransfer limits must be positive")
	}
	return errors.Join(errs...)
}

func (c *Config) path(p, name string) string {
	if p != "" {
		return p
	}
	return filepath.Join(c.StorePathRootDir, name)
}

func (c *Config) commitLogDir() string    { return c.path(c.StorePathCommitLog, "commitlog") }
func (c *Config) consumeQueueDir() string { return c.path(c.StorePathConsumeQueue, "consumequeue") }
func (c *Config) indexDir() string        { return c.path(c.StorePathIndex, "index") }
func (c *Config) checkpointPath() string  { return c.path(c.StoreCheckpoint, "checkpoint") }
func (c *Config) abortPath() string       { return c.path(c.AbortFile, "abort") }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ParseDelayLevels parses a messageDelayLevel value ("1s 5s 10s 1m 2h 1d")
// into delays per level (index level-1). Besides RocketMQ's units s, m, h
// and d it accepts ms (Tide extension, for tests and fine-grained levels).
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		num, unit := f[:len(f)-1], map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		if strings.HasSuffix(f, "ms") {
			num, unit = f[:len(f)-2], time.Millisecond
		}
		if unit == 0 {
			return nil, fmt.Errorf("messageDelayLevel %q: unit of %q is not ms, s, m, h or d", s, f)
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("messageDelayLevel %q: bad level %q", s, f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("messageDelayLevel %q has no levels", s)
	}
	return out, nil
}

func parseDeleteWhen(s string) (map[int]bool, error) {
	hours := map[int]bool{}
	for _, p := range strings.Split(s, ";") {
		h, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("deleteWhen %q: %q is not an hour 0-23", s, p)
		}
		hours[h] = true
	}
	return hours, nil
}
