package configs

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// ServerConfig is the primary Thrift listener (server.*).
type ServerConfig struct {
	Name                 string // accepted for drop-in files; not used
	BindHost             string
	Port                 int
	MinWorkerThreads     int // accepted for drop-in files; a Go listener has no pool to pre-start
	MaxWorkerThreads     int
	ClientSocketTimeout  time.Duration // 0 = no read timeout
	TCPKeepAlive         bool
	TCPKeepAliveIdle     time.Duration
	TCPKeepAliveInterval time.Duration
	TCPKeepAliveCount    int
	ShutdownTimeout      time.Duration
	FramedTransport      bool
	MaxMessageSize       int64 // bytes; also the limit of any single string or container length
	MaxConnsPerSource    int   // open connections of one client address; 0 = no cap
	TLS                  ListenerTLS
}

// ListenerTLS is a Thrift listener's TLS (server.tls.*): the certificate
// chain and its private key as PEM files, read again when they change.
type ListenerTLS struct {
	Enabled  bool
	CertFile string
	KeyFile  string
}

// FrontendConfig is one Thrift listener: the primary one (Name "") or an
// additional-frontends.<name> entry.
type FrontendConfig struct {
	Name                   string
	Profile                Profile
	BindHost               string
	Port                   int
	MinWorkerThreads       int
	MaxWorkerThreads       int
	ClientSocketTimeout    time.Duration
	TCPKeepAlive           bool
	TCPKeepAliveIdle       time.Duration
	TCPKeepAliveInterval   time.Duration
	TCPKeepAliveCount      int
	FramedTransport        bool
	MaxMessageSize         int64
	MaxConnsPerSource      int
	TLS                    ListenerTLS
	StandaloneMetastoreJar string // accepted for drop-in configs, ignored
}

// KeyPrefix is the prefix of this listener's keys ("server." or
// "additional-frontends.<name>.").
func (f *FrontendConfig) KeyPrefix() string {
	if f.Name == "" {
		return "server."
	}
	return "additional-frontends." + f.Name + "."
}

// Addr is host:port for net.Listen.
func (f *FrontendConfig) Addr() string { return net.JoinHostPort(f.BindHost, itoa(f.Port)) }

// Frontends returns every Thrift listener: the primary one first (Name ""),
// then the additional frontends in the order of the additional-frontends key.
func (c *Config) Frontends() []*FrontendConfig {
	s := &c.Server
	primary := &FrontendConfig{
		Name:                   "",
		Profile:                c.Compatibility.FrontendProfile,
		BindHost:               s.BindHost,
		Port:                   s.Port,
		MinWorkerThreads:       s.MinWorkerThreads,
		MaxWorkerThreads:       s.MaxWorkerThreads,
		ClientSocketTimeout:    s.ClientSocketTimeout,
		TCPKeepAlive:           s.TCPKeepAlive,
		TCPKeepAliveIdle:       s.TCPKeepAliveIdle,
		TCPKeepAliveInterval:   s.TCPKeepAliveInterval,
		TCPKeepAliveCount:      s.TCPKeepAliveCount,
		FramedTransport:        s.FramedTransport,
		MaxMessageSize:         s.MaxMessageSize,
		MaxConnsPerSource:      s.MaxConnsPerSource,
		TLS:                    s.TLS,
		StandaloneMetastoreJar: c.Compatibility.FrontendStandaloneMetastoreJar,
	}
	return append([]*FrontendConfig{primary}, c.AdditionalFrontends...)
}

const minWorkersIgnored = "a Go listener serves each connection on a goroutine started on demand, so there is no worker pool to pre-start; server.max-worker-threads bounds the calls served at once"

func serverFeature() *feature {
	s := func(c *Config) *ServerConfig { return &c.Server }
	return &feature{
		id: "server", title: "Primary listener",
		validate: func(p *parser, c *Config) {
			p.checkWorkerThreads("server.")
			p.checkListenerClashes(c)
			p.checkListenerTLS("server.", &c.Server.TLS)
		},
		keys: []*keyDef{
			{pattern: "server.name", typ: strT{}, def: "hms-proxy", example: "hms-proxy-2",
				ignored: "the instance name is not used by this build (logs and metrics name listeners instead)",
				meaning: "instance name",
				bind:    func(c *Config, _ match) any { return &s(c).Name }},
			{pattern: "server.bind-host", typ: strT{}, def: "0.0.0.0", example: "127.0.0.1",
				meaning: "address of the primary Thrift listener; `0.0.0.0`, `::` or empty = every address",
				bind:    func(c *Config, _ match) any { return &s(c).BindHost }},
			{pattern: "server.port", typ: portT, def: "9083", example: "9183",
				meaning: "port of the primary Thrift listener; `0` = OS-chosen (tests)",
				bind:    func(c *Config, _ match) any { return &s(c).Port }},
			{pattern: "server.min-worker-threads", typ: count(0), def: "200", example: "20",
				ignored: minWorkersIgnored,
				meaning: "Thrift worker threads kept started; must not exceed the maximum",
				bind:    func(c *Config, _ match) any { return &s(c).MinWorkerThreads }},
			{pattern: "server.max-worker-threads", typ: count(1), def: "1000", example: "300",
				meaning: "most client calls in flight at once on this listener (what a full Thrift worker pool bounds); a call beyond it waits in a queue of the same size for at most 30 s, then is refused with a TApplicationException saying the listener is busy (`hms_proxy_frontend_refused_total{reason=\"busy\"}`); idle connections take no worker",
				bind:    func(c *Config, _ match) any { return &s(c).MaxWorkerThreads }},
			{pattern: "server.client-socket-timeout-ms", typ: millis(0), def: "600000", example: "30000",
				meaning: "read timeout while waiting for the next request on a connection (it may close the connection up to a sixteenth of itself, at most 250 ms, late: a busy connection moves its deadline only that often); `0` = none",
				bind:    func(c *Config, _ match) any { return &s(c).ClientSocketTimeout }},
			{pattern: "server.tcp-keepalive", typ: boolT{}, def: "true", example: "false",
				meaning: "SO_KEEPALIVE on accepted connections",
				bind:    func(c *Config, _ match) any { return &s(c).TCPKeepAlive }},
			{pattern: "server.tcp-keepalive-idle-seconds", typ: seconds(1), def: "120", example: "60",
				meaning: "idle time before the first keepalive probe",
				bind:    func(c *Config, _ match) any { return &s(c).TCPKeepAliveIdle }},
			{pattern: "server.tcp-keepalive-interval-seconds", typ: seconds(1), def: "30", example: "10",
				meaning: "interval between keepalive probes",
				bind:    func(c *Config, _ match) any { return &s(c).TCPKeepAliveInterval }},
			{pattern: "server.tcp-keepalive-count", typ: count(1), def: "4", example: "6",
				meaning: "failed probes before the connection is closed",
				bind:    func(c *Config, _ match) any { return &s(c).TCPKeepAliveCount }},
			{pattern: "server.shutdown-timeout-seconds", typ: seconds(0), def: "30", example: "5",
				meaning: "bound on the orderly stop after SIGTERM",
				bind:    func(c *Config, _ match) any { return &s(c).ShutdownTimeout }},
			{pattern: "server.framed-transport", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "framed instead of buffered Thrift transport on the primary listener",
				bind:    func(c *Config, _ match) any { return &s(c).FramedTransport }},
			{pattern: "server.max-message-size", typ: intT{min: 1, max: 1<<63 - 1, wide: true}, def: "104857600", example: "1048576", isNew: true,
				meaning: "largest Thrift message in bytes; also the limit of any single string or container length",
				bind:    func(c *Config, _ match) any { return &s(c).MaxMessageSize }},
			{pattern: "server.max-connections-per-source", typ: count(0), def: "0", example: "200", isNew: true,
				meaning: "most open connections from one client IP address; a connection beyond it is closed at once (`hms_proxy_frontend_refused_total{reason=\"per_source\"}`, a WARN at most every 10 s); `0` = no cap",
				bind:    func(c *Config, _ match) any { return &s(c).MaxConnsPerSource }},
			{pattern: "server.tls.enabled", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "TLS on the primary listener, as a Hive metastore with `hive.metastore.use.SSL=true` (clients set the same and a trust store); SASL (`security.mode=KERBEROS`) then runs inside TLS",
				bind:    func(c *Config, _ match) any { return &s(c).TLS.Enabled }},
			{pattern: "server.tls.certificate-file", typ: strT{}, example: "/etc/hms-proxy/tls/server.pem", isNew: true,
				meaning: "PEM certificate chain of the listener, its own certificate first; read again when it changes",
				bind:    func(c *Config, _ match) any { return &s(c).TLS.CertFile }},
			{pattern: "server.tls.key-file", typ: strT{}, example: "/etc/hms-proxy/tls/server.key", isNew: true,
				meaning: "PEM private key of that certificate (unencrypted); read again when it changes",
				bind:    func(c *Config, _ match) any { return &s(c).TLS.KeyFile }},
		},
	}
}

func frontendsFeature() *feature {
	f := func(c *Config, m match) *FrontendConfig {
		for _, fc := range c.AdditionalFrontends {
			if fc.Name == m.get("frontend") {
				return fc
			}
		}
		panic("configs: frontend not created: " + m.get("frontend"))
	}
	const pre = "additional-frontends.<frontend>."
	inherit := func(suffix string, typ valueType, example string, bind func(*FrontendConfig) any) *keyDef {
		return &keyDef{pattern: pre + suffix, typ: typ, defOf: "server." + suffix, example: example,
			meaning: "as `server." + suffix + "`, for this listener",
			bind:    func(c *Config, m match) any { return bind(f(c, m)) }}
	}
	minThreads := inherit("min-worker-threads", count(0), "7", func(fc *FrontendConfig) any { return &fc.MinWorkerThreads })
	minThreads.ignored = minWorkersIgnored
	framed := inherit("framed-transport", boolT{}, "true", func(fc *FrontendConfig) any { return &fc.FramedTransport })
	framed.isNew = true
	maxMsg := inherit("max-message-size", intT{min: 1, max: 1<<63 - 1, wide: true}, "2048", func(fc *FrontendConfig) any { return &fc.MaxMessageSize })
	maxMsg.isNew = true
	perSource := inherit("max-connections-per-source", count(0), "50", func(fc *FrontendConfig) any { return &fc.MaxConnsPerSource })
	perSource.isNew = true
	tlsOn := inherit("tls.enabled", boolT{}, "true", func(fc *FrontendConfig) any { return &fc.TLS.Enabled })
	tlsCert := inherit("tls.certificate-file", strT{}, "/etc/hms-proxy/tls/hive4.pem", func(fc *FrontendConfig) any { return &fc.TLS.CertFile })
	tlsKey := inherit("tls.key-file", strT{}, "/etc/hms-proxy/tls/hive4.key", func(fc *FrontendConfig) any { return &fc.TLS.KeyFile })
	tlsOn.isNew, tlsCert.isNew, tlsKey.isNew = true, true, true
	return &feature{
		id: "additional-frontends", title: "Additional listeners",
		validate: func(p *parser, c *Config) {
			for _, fc := range c.AdditionalFrontends {
				p.checkWorkerThreads(fc.KeyPrefix())
				if p.isSet(fc.KeyPrefix()+"tls.enabled") || !c.Server.TLS.Enabled { // else inherited: server.tls.* reports
					p.checkListenerTLS(fc.KeyPrefix(), &fc.TLS)
				}
			}
		},
		keys: []*keyDef{
			{pattern: "additional-frontends", typ: namesT{what: "frontend"}, example: "hive4,hdp",
				meaning: "names of further Thrift listeners, each with its own port and profile (Thrift has no version handshake, so client populations that need different profiles get different ports)",
				bind: func(c *Config, _ match) any {
					return setter(func(v any) error {
						for _, n := range v.([]string) {
							c.AdditionalFrontends = append(c.AdditionalFrontends, &FrontendConfig{Name: n})
						}
						return nil
					})
				}},
			{pattern: pre + "port", typ: portT, example: "9084",
				required: `required for additional frontend "<frontend>"`,
				meaning:  "port of this listener",
				bind:     func(c *Config, m match) any { return &f(c, m).Port }},
			{pattern: pre + "frontend-profile", typ: profileT,
				example:  "APACHE_4_1_0",
				required: `required for additional frontend "<frontend>"; one of ` + strings.Join(profileNames(), ", "),
				meaning:  "the Thrift API this listener speaks to its clients",
				bind:     func(c *Config, m match) any { return &f(c, m).Profile }},
			{pattern: pre + "standalone-metastore-jar", typ: strT{}, example: "hive-metastore/hdp.jar",
				ignored: jarIgnored,
				meaning: "Hortonworks standalone-metastore jar of this listener (the Java proxy loads it; required there for non-APACHE_3_1_3 profiles)",
				bind:    func(c *Config, m match) any { return &f(c, m).StandaloneMetastoreJar }},
			inherit("bind-host", strT{}, "127.0.0.2", func(fc *FrontendConfig) any { return &fc.BindHost }),
			minThreads,
			inherit("max-worker-threads", count(1), "77", func(fc *FrontendConfig) any { return &fc.MaxWorkerThreads }),
			inherit("client-socket-timeout-ms", millis(0), "7000", func(fc *FrontendConfig) any { return &fc.ClientSocketTimeout }),
			inherit("tcp-keepalive", boolT{}, "false", func(fc *FrontendConfig) any { return &fc.TCPKeepAlive }),
			inherit("tcp-keepalive-idle-seconds", seconds(1), "7", func(fc *FrontendConfig) any { return &fc.TCPKeepAliveIdle }),
			inherit("tcp-keepalive-interval-seconds", seconds(1), "7", func(fc *FrontendConfig) any { return &fc.TCPKeepAliveInterval }),
			inherit("tcp-keepalive-count", count(1), "7", func(fc *FrontendConfig) any { return &fc.TCPKeepAliveCount }),
			framed,
			maxMsg,
			perSource,
			tlsOn,
			tlsCert,
			tlsKey,
		},
	}
}

// checkListenerTLS: a TLS listener needs its certificate and key files (the
// files themselves are read when the listener is built).
func (p *parser) checkListenerTLS(prefix string, t *ListenerTLS) {
	if !t.Enabled {
		return
	}
	for _, k := range []struct{ key, val string }{{"tls.certificate-file", t.CertFile}, {"tls.key-file", t.KeyFile}} {
		if k.val == "" {
			also := ""
			if prefix != "server." {
				also = " (or server." + k.key + ", its default)"
			}
			p.fail(missingf(prefix+k.key, "required when %stls.enabled=true%s", prefix, also))
		}
	}
}

// checkWorkerThreads: the minimum must not exceed the maximum (named by the
// key that was written).
func (p *parser) checkWorkerThreads(prefix string) {
	minKey, maxKey := prefix+"min-worker-threads", prefix+"max-worker-threads"
	lo, hi := p.setting(minKey), p.setting(maxKey)
	if lo == nil || hi == nil || lo.bad || hi.bad || !lo.has || !hi.has {
		return
	}
	minV, maxV := mustParse(lo.key.typ, lo.text).(int), mustParse(hi.key.typ, hi.text).(int)
	if minV <= maxV {
		return
	}
	key := minKey
	if !lo.fromFile { // the min is a default: name the key that was written
		key = maxKey
	}
	p.fail(errorf(key, p.shown(key), "%s (%d) must not exceed %s (%d)", minKey, minV, maxKey, maxV))
}

// ---- listener clashes ----

type listenerRef struct {
	desc     string // for the message
	portKey  string
	hostKey  string
	host     string
	port     int
	portDflt bool // the port is a default, not written in the file
}

func isWildcard(host string) bool {
	h := strings.Trim(host, "[]")
	return h == "" || h == "0.0.0.0" || h == "::" || h == "0:0:0:0:0:0:0:0"
}

func hostsOverlap(a, b string) bool {
	if isWildcard(a) || isWildcard(b) {
		return true
	}
	return strings.EqualFold(strings.Trim(a, "[]"), strings.Trim(b, "[]"))
}

// checkListenerClashes: every listener (primary, management, each additional
// frontend, the REST catalog) needs its own host:port; a wildcard bind host
// takes the port on every address. Hosts are compared as written.
func (p *parser) checkListenerClashes(c *Config) {
	var ls []listenerRef
	add := func(desc, portKey, hostKey, host string, port int) {
		if p.bad[portKey] {
			return
		}
		ls = append(ls, listenerRef{desc: desc, portKey: portKey, hostKey: hostKey, host: host, port: port, portDflt: !p.isSet(portKey)})
	}
	add("the primary listener", "server.port", "server.bind-host", c.Server.BindHost, c.Server.Port)
	if c.Management.Enabled {
		add("the management listener", "management.port", "management.bind-host", c.Management.BindHost, c.Management.Port)
	}
	for _, f := range c.AdditionalFrontends {
		pre := "additional-frontends." + f.Name + "."
		if !p.isSet(pre + "port") {
			continue // required; reported already
		}
		add(fmt.Sprintf("additional frontend %q", f.Name), pre+"port", pre+"bind-host", f.BindHost, f.Port)
	}
	if c.RESTCatalog.Enabled {
		add("the Iceberg REST listener", "rest-catalog.port", "rest-catalog.bind-host", c.RESTCatalog.BindHost, c.RESTCatalog.Port)
	}
	for j := 1; j < len(ls); j++ {
		for i := 0; i < j; i++ {
			a, b := ls[i], ls[j]
			if a.port == 0 || a.port != b.port || !hostsOverlap(a.host, b.host) {
				continue
			}
			why := ""
			if !strings.EqualFold(a.host, b.host) {
				why = " (a wildcard bind host takes the port on every address)"
			}
			msg := fmt.Sprintf("%s on %s clashes with %s on %s (%s/%s)%s",
				b.desc, net.JoinHostPort(b.host, itoa(b.port)), a.desc, net.JoinHostPort(a.host, itoa(a.port)), a.hostKey, a.portKey, why)
			if b.portDflt {
				p.fail(missingf(b.portKey, "not set; its default %d: %s", b.port, msg))
			} else {
				p.fail(errorf(b.portKey, itoa(b.port), "%s", msg))
			}
		}
	}
}
