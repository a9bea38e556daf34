package suite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
	"github.com/hms-proxy/hms-proxy/bench/report"
	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Setup keys of the Kerberized front door.
const (
	ProxyInstantKrbAuth = report.ProxyInstantKrbAuth
	ProxyInstantKrbConf = report.ProxyInstantKrbConf
)

// startKerberos starts a real MIT KDC (the test bed's) and two proxies with security.mode=KERBEROS in front of
// the instant backend, one offering auth and one auth-conf; the load client logs in from a keytab and opens every
// connection with SASL GSSAPI. The proxies' Go Kerberos reads $KRB5_CONFIG, set for them here.
func (s *suite) startKerberos(inst string, add func(key, title, path, addr string, meter *proc.Child)) error {
	k, err := testbed.StartKDC(testbed.KDCOptions{})
	if err != nil {
		return err
	}
	s.kdc = k
	if err := os.Setenv("KRB5_CONFIG", k.Krb5Conf); err != nil {
		return err
	}
	proxyKT, err := k.PrincipalKeytab("proxy.keytab", "hmsproxy/localhost")
	if err != nil {
		return err
	}
	clientKT, err := k.PrincipalKeytab("bench.keytab", "bench")
	if err != nil {
		return err
	}
	kt, err := gssapi.LoadKeytab(clientKT)
	if err != nil {
		return err
	}
	cfg, err := gssapi.LoadConfig(k.Krb5Conf)
	if err != nil {
		return err
	}
	login, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: k.Principal("bench"), Keytab: kt, Config: cfg})
	if err != nil {
		return err
	}
	for _, v := range []struct {
		key, title, protection string
		qop                    sasl.QOP
	}{
		{ProxyInstantKrbAuth, "(k) hms-proxy, Kerberos auth, to the instant backend", "authentication", sasl.QOPAuth},
		{ProxyInstantKrbConf, "(k') hms-proxy, Kerberos auth-conf, to the instant backend", "privacy", sasl.QOPAuthConf},
	} {
		p, err := s.startKerberizedProxy(v.key, inst, proxyKT, k.Realm, v.protection)
		if err != nil {
			return err
		}
		add(v.key, v.title, "client -(SASL GSSAPI "+string(v.qop)+")-> hms-proxy (1 catalog, audit on) -> instant backend", p.Addr, p)
		in, err := gssapi.NewInitiator(gssapi.InitiatorOptions{Login: login, Principal: k.Principal("hmsproxy/localhost"), QOPs: []sasl.QOP{v.qop}})
		if err != nil {
			return err
		}
		dial := in.Dial(&net.Dialer{Timeout: 10 * time.Second})
		addr := p.Addr
		s.setups[v.key].dial = func() (*load.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := dial(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return load.NewConn(c), nil
		}
	}
	return nil
}

func (s *suite) startKerberizedProxy(name, inst, keytab, realm, protection string) (*proc.Child, error) {
	dir := filepath.Join(s.opt.Work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := proxybench.FreePort()
	if err != nil {
		return nil, err
	}
	mport, err := proxybench.FreePort()
	if err != nil {
		return nil, err
	}
	props := proxybench.Props(proxybench.ProxyConfig{Port: port, MgmtPort: mport, Backends: []string{inst},
		PoolSize: concs[len(concs)-1], Audit: true, Dir: dir})
	props["security.mode"] = "KERBEROS"
	props["security.server-principal"] = "hmsproxy/_HOST@" + realm
	props["security.keytab"] = keytab
	props["security.front-door-conf.hadoop.rpc.protection"] = protection
	file := filepath.Join(dir, "hms-proxy.properties")
	if err := os.WriteFile(file, []byte(proxybench.PropsText(props)), 0o644); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c, err := proc.StartWait(name, filepath.Join(dir, "hms-proxy.log"), 20*time.Second, func() error {
		cn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return cn.Close()
	}, s.bin("hms-proxy"), file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.Addr = addr
	s.mgmt[c] = "127.0.0.1:" + strconv.Itoa(mport)
	return c, nil
}

// dialSetup opens one load connection to a setup (SASL for the Kerberized ones).
func (s *suite) dialSetup(st *setup) (*load.Conn, error) {
	if st.dial != nil {
		return st.dial()
	}
	return load.Dial(st.addr, 10*time.Second)
}

// stopKerberos stops the KDC.
func (s *suite) stopKerberos() {
	if s.kdc != nil {
		s.kdc.Stop()
		os.RemoveAll(s.kdc.Dir)
		s.kdc = nil
	}
}
