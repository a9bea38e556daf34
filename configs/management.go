package configs

import (
	"net"
	"time"
)

// ManagementConfig is the management HTTP listener (management.*).
type ManagementConfig struct {
	Enabled        bool
	BindHost       string
	Port           int
	Threads        int
	ReadinessCache time.Duration // 0 = probe on every request
	ReloadEnabled  bool          // management.reload-enabled: serve POST /reload
}

// Addr is host:port for net.Listen.
func (m *ManagementConfig) Addr() string { return net.JoinHostPort(m.BindHost, itoa(m.Port)) }

// DefaultManagementPortOffset: the management port defaults to server.port
// plus this.
const DefaultManagementPortOffset = 1000

func managementFeature() *feature {
	mg := func(c *Config) *ManagementConfig { return &c.Management }
	return &feature{
		id: "management", title: "Management listener",
		on:  func(c *Config) bool { return c.Management.Enabled },
		off: offBecause("the management listener is off (management.enabled=false)"),
		validate: func(p *parser, c *Config) {
			m := &c.Management
			if m.Enabled && m.Threads == 1 {
				p.warnf("management.threads=1: a slow /readyz then blocks /healthz and /metrics; use at least 2")
			}
			if s := p.setting("management.port"); m.Enabled && !s.has && !s.fromFile && !p.bad["server.port"] {
				p.fail(missingf("management.port", "not set, and its default server.port + %d = %d is not a valid port; set management.port",
					DefaultManagementPortOffset, c.Server.Port+DefaultManagementPortOffset))
			}
		},
		keys: []*keyDef{
			{pattern: "management.enabled", typ: boolT{}, sw: true, example: "true",
				defFunc: func(p *parser, _ match) (string, bool) {
					return boolText(p.has("management.port")), true
				},
				defDoc:  "`true` when `management.port` is set, else `false`",
				meaning: "serve /healthz, /readyz and /metrics over HTTP; this listener has **no authentication**: bind it to a monitoring network only",
				bind:    func(c *Config, _ match) any { return &mg(c).Enabled }},
			{pattern: "management.bind-host", typ: strT{}, defOf: "server.bind-host", example: "127.0.0.1",
				meaning: "address of the management listener",
				bind:    func(c *Config, _ match) any { return &mg(c).BindHost }},
			{pattern: "management.port", typ: portT, example: "19083",
				defFunc: func(p *parser, _ match) (string, bool) {
					if p.bad["server.port"] {
						return "", false
					}
					sp := p.cfg.Server.Port
					if sp == 0 {
						return "0", true // an OS-chosen server port: let the OS choose this one too
					}
					if sp+DefaultManagementPortOffset > 65535 {
						return "", false
					}
					return itoa(sp + DefaultManagementPortOffset), true
				},
				defDoc:  "`server.port + 1000` (`0` when `server.port=0`)",
				meaning: "port of the management listener; setting it turns the listener on",
				bind:    func(c *Config, _ match) any { return &mg(c).Port }},
			{pattern: "management.threads", typ: count(1), def: "4", example: "2",
				meaning: "requests served at once (keep at least two, so a slow /readyz blocks nothing)",
				bind:    func(c *Config, _ match) any { return &mg(c).Threads }},
			{pattern: "management.readiness-cache-ms", typ: millis(0), def: "2000", example: "0",
				meaning: "how long a /readyz probe result is reused; `0` probes on every request",
				bind:    func(c *Config, _ match) any { return &mg(c).ReadinessCache }},
			{pattern: "management.reload-enabled", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "serve `POST /reload` (re-read the configuration file, as SIGHUP does); off by default, as the listener has no authentication",
				bind:    func(c *Config, _ match) any { return &mg(c).ReloadEnabled }},
		},
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
