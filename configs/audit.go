package configs

import (
	"path/filepath"
	"time"
)

// Log levels (LoggingConfig.Level).
const (
	LevelDebug = "DEBUG"
	LevelInfo  = "INFO"
	LevelWarn  = "WARN"
	LevelError = "ERROR"
)

// AuditConfig is audit.*: the structured audit log, one JSON line per request.
type AuditConfig struct {
	Enabled          bool
	File             string
	MaxFileSizeBytes int64
	MaxBackups       int
	// FlushInterval: 0 writes each record when it is logged; more collects
	// the records of up to this long and writes them together.
	FlushInterval time.Duration
}

// LoggingConfig is logging.*: the main log.
type LoggingConfig struct {
	Level            string // DEBUG | INFO | WARN | ERROR
	File             string // "" = stderr only
	MaxFileSizeBytes int64
	MaxBackups       int
	DebugTracing     bool
}

// DefaultAuditFile is the default of audit.file.
const DefaultAuditFile = "logs/hms-proxy-audit.log"

func auditFeature() *feature {
	a := func(c *Config) *AuditConfig { return &c.Audit }
	return &feature{
		id: "audit", title: "Audit log",
		on:  func(c *Config) bool { return c.Audit.Enabled },
		off: offBecause("audit.enabled=false"),
		validate: func(p *parser, c *Config) {
			if s := p.setting("audit.file"); c.Audit.Enabled && c.Audit.File == "" && !s.bad {
				p.fail(errorf("audit.file", s.raw, "must name a file while audit.enabled=true (set audit.enabled=false to turn the audit log off)"))
			}
		},
		keys: []*keyDef{
			{pattern: "audit.enabled", typ: boolT{}, def: "true", example: "false", sw: true, isNew: true,
				meaning: "write one JSON line per request (the Java proxy's audit logger)",
				bind:    func(c *Config, _ match) any { return &a(c).Enabled }},
			{pattern: "audit.file", typ: strT{}, def: DefaultAuditFile, example: "/var/log/hms-proxy/audit.log", isNew: true,
				meaning: "the audit file, a file of its own; relative to the working directory",
				bind:    func(c *Config, _ match) any { return &a(c).File }},
			{pattern: "audit.max-file-size-mb", typ: mibT{min: 1}, def: "100", example: "10", isNew: true,
				meaning: "the file is rolled at this size",
				bind:    func(c *Config, _ match) any { return &a(c).MaxFileSizeBytes }},
			{pattern: "audit.max-backups", typ: count(0), def: "10", example: "3", isNew: true,
				meaning: "rolled files kept",
				bind:    func(c *Config, _ match) any { return &a(c).MaxBackups }},
			{pattern: "audit.flush-interval-ms", typ: millis(0), def: "0", example: "100", isNew: true,
				meaning: "0: every record is written to the file when its request ends (one write(2) per request, as the Java proxy's log4j appender flushes); more: records collect in memory and are written together at most this long after the first of them (or at 64 KiB), in order, none split, a shutdown writing the rest; a crash loses at most this interval's records. Saves a system call per request",
				bind:    func(c *Config, _ match) any { return &a(c).FlushInterval }},
		},
	}
}

func loggingFeature() *feature {
	l := func(c *Config) *LoggingConfig { return &c.Logging }
	return &feature{
		id: "logging", title: "Logging",
		validate: func(p *parser, c *Config) {
			lg := c.Logging
			if lg.DebugTracing && lg.Level != LevelDebug {
				p.warnf("logging.debug-tracing=true has no effect while logging.level=%s: traces are written at DEBUG", lg.Level)
			}
			if c.Audit.Enabled && lg.File != "" && c.Audit.File != "" && filepath.Clean(lg.File) == filepath.Clean(c.Audit.File) {
				p.fail(errorf("logging.file", lg.File, "is also audit.file; the audit log must be a file of its own so it stays valid JSON lines"))
			}
		},
		keys: []*keyDef{
			{pattern: "logging.level", typ: enum(LevelDebug, LevelInfo, LevelWarn, LevelError), def: LevelInfo, example: LevelDebug, isNew: true,
				meaning: "level of the main log",
				bind:    func(c *Config, _ match) any { return &l(c).Level }},
			{pattern: "logging.file", typ: strT{}, example: "logs/hms-proxy.log", isNew: true,
				meaning: "also write the main log to this rolling file; unset = stderr only",
				bind:    func(c *Config, _ match) any { return &l(c).File }},
			{pattern: "logging.max-file-size-mb", typ: mibT{min: 1}, def: "50", example: "10", isNew: true,
				meaning: "the log file is rolled at this size",
				bind:    func(c *Config, _ match) any { return &l(c).MaxFileSizeBytes }},
			{pattern: "logging.max-backups", typ: count(0), def: "10", example: "3", isNew: true,
				meaning: "rolled log files kept",
				bind:    func(c *Config, _ match) any { return &l(c).MaxBackups }},
			{pattern: "logging.debug-tracing", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "trace every call and answer at DEBUG (costs CPU on every call)",
				bind:    func(c *Config, _ match) any { return &l(c).DebugTracing }},
		},
	}
}
