package app

import (
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/security/zksasl"
)

// zooKeeperSASL builds the SASL/Kerberos authentication of a ZooKeeper store
// (security.mode=KERBEROS) and checks it at start: the keytab login and a
// service ticket for every server, so that a wrong keytab or an unknown
// principal is a start error naming it.
func zooKeeperSASL(sc *configs.SecurityConfig, store string, login zksasl.LoginOptions, servers []string) (*zksasl.Authenticator, error) {
	l, err := zksasl.NewLogin(login)
	if err != nil {
		return nil, err
	}
	a, err := zksasl.New(zksasl.Options{Store: store, Login: l, ServerPrincipal: sc.ZooKeeperServerPrincipal,
		ServerPrincipalKey: "security.zookeeper.server-principal"})
	if err != nil {
		return nil, err
	}
	if err := a.Check(servers); err != nil {
		return nil, err
	}
	return a, nil
}

// lockStoreSASL is the lock store's authentication: the front door's
// credentials (security.server-principal, security.keytab).
func lockStoreSASL(cfg *configs.Config) (*zksasl.Authenticator, error) {
	sc := &cfg.Security
	host := ""
	if fs := cfg.Frontends(); len(fs) > 0 {
		host = fs[0].BindHost // _HOST as the front door expands it
	}
	return zooKeeperSASL(sc, "synthetic lock store", zksasl.LoginOptions{
		Principal: sc.ServerPrincipal, PrincipalKey: "security.server-principal", Host: host,
		Keytab: sc.Keytab, KeytabKey: "security.keytab"}, zksasl.Servers(cfg.SyntheticLock.ZooKeeper.ConnectString))
}

// tokenStoreSASL is the token store's authentication: the front-door conf's
// hive.metastore.kerberos.principal / .keytab.file (default
// security.server-principal / security.keytab), as Hive's store uses them.
func tokenStoreSASL(cfg *configs.Config, servers []string) (*zksasl.Authenticator, error) {
	sc := &cfg.Security
	t := sc.DelegationTokens
	return zooKeeperSASL(sc, "delegation token store", zksasl.LoginOptions{
		Principal: t.KerberosPrincipal, PrincipalKey: "security.front-door-conf.hive.metastore.kerberos.principal",
		Keytab: t.KerberosKeytab, KeytabKey: "security.front-door-conf.hive.metastore.kerberos.keytab.file"}, servers)
}

// tokenStoreSession makes the ZooKeeper token store's session (nil z: the
// memory store) authenticate with SASL/Kerberos; with
// security.zookeeper.sasl.enabled=false it refuses to start unless the ACL
// of its znodes is given explicitly, rather than store tokens
// world-readable without being asked to.
func tokenStoreSession(cfg *configs.Config, z *tokens.ZKOptions) error {
	if z == nil {
		return nil
	}
	sc := &cfg.Security
	if !sc.ZooKeeperSASL {
		if strings.TrimSpace(sc.FrontDoorConf[tokens.KeyZKACL]) == "" {
			return fmt.Errorf("security.front-door-conf.%s is unset while security.mode=KERBEROS and "+
				"security.zookeeper.sasl.enabled=false: the token store's session is not authenticated, so its znodes "+
				"cannot carry sasl ACLs; set the ACL explicitly (world:anyone:cdrwa, or ip:<range>:cdrwa, on a "+
				"network-restricted ZooKeeper) or enable ZooKeeper SASL", tokens.KeyZKACL)
		}
		return nil
	}
	auth, err := tokenStoreSASL(cfg, z.Servers)
	if err != nil {
		return err
	}
	z.Dialer, z.AuthError = auth.Dial, auth.LastError
	return nil
}
