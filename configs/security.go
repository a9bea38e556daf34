package configs

import (
	"fmt"
	"regexp"
	"strings"
)

// Security modes (SecurityConfig.Mode).
const (
	SecurityNone     = "NONE"
	SecurityKerberos = "KERBEROS"
)

// SecurityConfig is security.*: the front door's authentication, outbound
// Kerberos credentials, impersonation, and the front-door HiveConf.
type SecurityConfig struct {
	Mode            string // NONE | KERBEROS
	ServerPrincipal string // _HOST is expanded by the Kerberos component
	Keytab          string
	// ClientPrincipal and ClientKeytab: outbound Kerberos to backends
	// (default: the server's).
	ClientPrincipal string
	ClientKeytab    string
	// ImpersonationEnabled is the default of catalog.<name>.impersonation-enabled.
	ImpersonationEnabled bool
	// ServicePrincipals bypass impersonation (security.service-principals
	// and security.service-principals.*, merged).
	ServicePrincipals []string
	// FrontDoorConf holds every security.front-door-conf.* entry (key
	// without the prefix), interpreted or not.
	FrontDoorConf map[string]string
	// From security.front-door-conf.hadoop.rpc.protection: the SASL qualities
	// of protection the front door offers.
	RPCProtection []string
	// From security.front-door-conf.hadoop.security.auth_to_local and
	// ….auth_to_local.mechanism (hadoop or mit).
	AuthToLocal          string
	AuthToLocalMechanism string
	DelegationTokens     DelegationTokenConfig
	// From security.front-door-conf.hadoop.proxyuser.<service>.*.
	ProxyUsers map[string]*ProxyUserRule
	// ZooKeeperServerPrincipal is security.zookeeper.server-principal: the
	// service principal of the ZooKeeper servers the lock store and the token
	// store authenticate to with SASL/Kerberos (default zookeeper/_HOST).
	ZooKeeperServerPrincipal string
	// ZooKeeperSASL is security.zookeeper.sasl.enabled: with KERBEROS the
	// ZooKeeper lock and token stores authenticate with SASL (default true).
	ZooKeeperSASL bool
}

// DefaultZooKeeperServerPrincipal is security.zookeeper.server-principal's
// default: ZooKeeper's own client default (user "zookeeper", the canonical
// name of the server dialled, the client's realm).
const DefaultZooKeeperServerPrincipal = "zookeeper/_HOST"

const frontDoorConf = "security.front-door-conf."

func kerberosFeature() *feature {
	sc := func(c *Config) *SecurityConfig { return &c.Security }
	return &feature{
		id: "kerberos", title: "Front-door Kerberos (SASL/GSSAPI)",
		on:   func(c *Config) bool { return c.Security.Mode == SecurityKerberos },
		off:  offBecause("security.mode=NONE (clients are not authenticated)"),
		loss: "serve clients without authentication",
		validate: func(p *parser, c *Config) {
			if c.Security.Mode != SecurityKerberos {
				return
			}
			if c.Security.ServerPrincipal == "" {
				p.fail(missingf("security.server-principal", "required when security.mode=KERBEROS"))
			}
			if c.Security.Keytab == "" {
				p.fail(missingf("security.keytab", "required when security.mode=KERBEROS"))
			}
			for _, fc := range c.Frontends() {
				if !fc.FramedTransport {
					continue
				}
				key := "server.framed-transport"
				if fc.Name != "" {
					key = "additional-frontends." + fc.Name + ".framed-transport"
				}
				p.fail(errorf(key, "true", "framed transport is not supported with SASL (security.mode=KERBEROS); Hive refuses the combination too: use the buffered transport on this listener"))
			}
		},
		keys: []*keyDef{
			{pattern: "security.mode", typ: enum(SecurityNone, SecurityKerberos), def: SecurityNone, example: SecurityKerberos,
				sw: true, gate: gateNonDefault,
				meaning: "authentication of clients at the front door",
				bind:    func(c *Config, _ match) any { return &sc(c).Mode },
				then: func(p *parser) {
					p.cfg.Security.FrontDoorConf = map[string]string{}
					for k, v := range p.props {
						if rest, ok := strings.CutPrefix(k, frontDoorConf); ok && rest != "" {
							p.cfg.Security.FrontDoorConf[rest] = strings.TrimSpace(v)
						}
					}
				}},
			{pattern: "security.server-principal", typ: strT{}, example: "hive/_HOST@EXAMPLE.COM",
				meaning: "the proxy's service principal; `_HOST` becomes the host's canonical name; required with `KERBEROS`",
				bind:    func(c *Config, _ match) any { return &sc(c).ServerPrincipal }},
			{pattern: "security.keytab", typ: strT{}, example: "/etc/security/keytabs/hms-proxy.keytab",
				meaning: "keytab of `security.server-principal`; required with `KERBEROS`",
				bind:    func(c *Config, _ match) any { return &sc(c).Keytab }},
			{pattern: frontDoorConf + "hadoop.rpc.protection", typ: rpcProtectionT, def: "authentication", example: "authentication,privacy",
				meaning: "SASL qualities of protection the front door offers (`authentication`, `integrity`, `privacy`; a list offers several)",
				bind:    func(c *Config, _ match) any { return &sc(c).RPCProtection }},
			{pattern: frontDoorConf + "hadoop.security.auth_to_local", typ: authToLocalT{}, def: "DEFAULT", example: "RULE:[2:$1@$0](hive@EXAMPLE.COM)s/@.*// DEFAULT",
				meaning: "Hadoop rules mapping a client principal to the user name",
				bind:    func(c *Config, _ match) any { return &sc(c).AuthToLocal }},
			{pattern: frontDoorConf + "hadoop.security.auth_to_local.mechanism", typ: enum("hadoop", "mit"), def: "hadoop", example: "mit",
				meaning: "`hadoop`: a principal no rule maps to a simple name is refused; `mit`: it is served under its full name, as Hive 3.1.3 does",
				bind:    func(c *Config, _ match) any { return &sc(c).AuthToLocalMechanism }},
			{pattern: "security.zookeeper.server-principal", typ: strT{}, def: DefaultZooKeeperServerPrincipal,
				example: "zookeeper/_HOST@EXAMPLE.COM", isNew: true, gate: gateNonDefault,
				meaning: "service principal of the ZooKeeper servers the ZooKeeper lock store and token store authenticate to (SASL/Kerberos) with `KERBEROS`; `_HOST` becomes the canonical name of the server dialled, no realm means the client's (ZooKeeper's Java client: `zookeeper.server.principal`)",
				bind:    func(c *Config, _ match) any { return &sc(c).ZooKeeperServerPrincipal }},
			{pattern: "security.zookeeper.sasl.enabled", typ: boolT{}, def: "true", example: "false", isNew: true, gate: gateNonDefault,
				meaning: "with `KERBEROS`, the ZooKeeper lock store and token store authenticate to ZooKeeper with SASL/Kerberos and protect their znodes with `sasl` ACLs; `false` is for a ZooKeeper without Kerberos: the lock store's znodes are then world-accessible and the token store needs an explicit world or ip `…token.store.zookeeper.acl` (ZooKeeper's Java client: `zookeeper.sasl.client`)",
				bind:    func(c *Config, _ match) any { return &sc(c).ZooKeeperSASL }},
			{pattern: frontDoorConf + "*", typ: strT{}, example: "value",
				ignored: "hms-proxy does not read this front-door HiveConf setting (every entry is kept in the front-door conf map)",
				meaning: "any other front-door HiveConf setting",
				bind:    func(*Config, match) any { return setter(func(any) error { return nil }) }}, // kept in FrontDoorConf by security.mode's hook
		},
	}
}

// authToLocalT checks the shape of Hadoop auth_to_local rules: whitespace-
// separated DEFAULT or RULE:[n:format](regex)s/pattern/replacement/[g][/L].
// The regexes themselves are Java's and are checked by the Kerberos
// component that applies them.
type authToLocalT struct{}

var authRule = regexp.MustCompile(`^RULE:\[\d+:[^\]]*\](\([^)]*\))?(s/[^/]*/[^/]*/g?)?(/L)?$`)

func (authToLocalT) parse(v string) (any, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return nil, fmt.Errorf("no rule; use DEFAULT or RULE:[n:format](regex)s/pattern/replacement/")
	}
	for _, r := range fields {
		if r != "DEFAULT" && !authRule.MatchString(r) {
			return nil, fmt.Errorf("rule %q is not DEFAULT or RULE:[n:format](regex)s/pattern/replacement/[g][/L]", r)
		}
	}
	return strings.Join(fields, " "), nil
}
func (authToLocalT) format(v any) string { return v.(string) }
func (authToLocalT) doc() string         { return "Hadoop auth_to_local rules" }
