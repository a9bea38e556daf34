package dbcache

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Kind names one of the two caches, as the cache label spells it.
type Kind string

// The caches.
const (
	DatabaseList     Kind = "database_list"     // get_all_databases / get_databases replies, per catalog
	DatabaseMetadata Kind = "database_metadata" // get_database replies
)

// Defaults (the specification's example values; max-bytes is an hms-proxy
// addition).
const (
	DefaultMaxEntries     = 1000
	DefaultMaxBytes       = 64 << 20
	DefaultRefreshEvery   = 60 * time.Second
	DefaultActivityWindow = time.Hour
	// BatchSpanTTLs bounds sliding batch expiry: an entry is never kept
	// longer than this many TTLs after it was loaded by the extension alone.
	BatchSpanTTLs = 10
	// refreshParallelism bounds concurrent background reloads.
	refreshParallelism = 4
)

// CacheOptions configure one cache (routing.database-list-cache.* or
// routing.database-metadata-cache.*).
type CacheOptions struct {
	TTL               time.Duration // .ttl-ms, or .ttl-seconds x 1000; 0 = the cache is off
	MaxEntries        int           // .max-entries (1000)
	MaxBytes          int64         // .max-bytes (hms-proxy; 64 MiB): bound on the cached reply bytes
	SharedAcrossUsers bool          // .shared-across-users: one entry for all callers, else one per caller
}

// RefreshOptions configure background refresh (routing.database-cache.background-refresh.*).
type RefreshOptions struct {
	Enabled        bool          // .enabled
	Interval       time.Duration // .interval-ms (60000)
	ActivityWindow time.Duration // .activity-window-ms (3600000)
}

// Options configure a Cache.
type Options struct {
	List     CacheOptions
	Metadata CacheOptions
	Refresh  RefreshOptions
	Metrics  *Metrics
	Log      *slog.Logger     // nil: slog.Default()
	Now      func() time.Time // nil: time.Now (tests inject a clock)
	// Ticks gives the background loop's ticks every d and a function that
	// stops them (nil: a time.Ticker; tests inject ticks they send by hand).
	Ticks func(d time.Duration) (<-chan time.Time, func())
}

// Validate reports every bad value, naming its key.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, c := range []struct {
		prefix string
		o      CacheOptions
	}{{"routing.database-list-cache", o.List}, {"routing.database-metadata-cache", o.Metadata}} {
		if c.o.TTL < 0 {
			bad("%s.ttl-ms=%d: must not be negative", c.prefix, c.o.TTL.Milliseconds())
		}
		if c.o.MaxEntries < 0 {
			bad("%s.max-entries=%d: must be at least 1", c.prefix, c.o.MaxEntries)
		}
		if c.o.MaxBytes < 0 {
			bad("%s.max-bytes=%d: must be at least 1", c.prefix, c.o.MaxBytes)
		}
	}
	r := o.Refresh
	if r.Interval < 0 {
		bad("routing.database-cache.background-refresh.interval-ms=%d: must be at least 1", r.Interval.Milliseconds())
	}
	if r.ActivityWindow < 0 {
		bad("routing.database-cache.background-refresh.activity-window-ms=%d: must not be negative", r.ActivityWindow.Milliseconds())
	}
	if r.Enabled && o.List.TTL == 0 && o.Metadata.TTL == 0 {
		bad("routing.database-cache.background-refresh.enabled=true, but both caches are off (routing.database-list-cache.ttl-ms and routing.database-metadata-cache.ttl-ms are 0): nothing to refresh")
	}
	return errors.Join(errs...)
}

func (c CacheOptions) withDefaults() CacheOptions {
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

func (r RefreshOptions) withDefaults() RefreshOptions {
	if r.Interval == 0 {
		r.Interval = DefaultRefreshEvery
	}
	if r.ActivityWindow == 0 {
		r.ActivityWindow = DefaultActivityWindow
	}
	return r
}
