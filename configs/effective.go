package configs

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Effective renders every effective setting, defaults included, as sorted
// key=value lines in .properties syntax (escaped so that the output reads
// back into the same configuration). Recognised-but-not-implemented keys are
// not settings and are left out (they are in Warnings). Values of catalog
// conf keys whose name mentions a password or secret are masked.
func (c *Config) Effective() string {
	m := map[string]string{}
	b := strconv.FormatBool
	i := strconv.Itoa
	ms := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) }
	sec := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
	mb := func(n int64) string { return strconv.FormatInt(n/mib, 10) }

	s := c.Server
	m["server.name"] = s.Name
	m["server.bind-host"] = s.BindHost
	m["server.port"] = i(s.Port)
	m["server.shutdown-timeout-seconds"] = sec(s.ShutdownTimeout)
	for _, f := range c.Frontends() {
		pre := "server."
		if f.Name != "" {
			pre = key2(f.Name)
			m[pre+"port"] = i(f.Port)
			m[pre+"bind-host"] = f.BindHost
			m[pre+"frontend-profile"] = string(f.Profile)
			if f.StandaloneMetastoreJar != "" {
				m[pre+"standalone-metastore-jar"] = f.StandaloneMetastoreJar
			}
		}
		m[pre+"min-worker-threads"] = i(f.MinWorkerThreads)
		m[pre+"max-worker-threads"] = i(f.MaxWorkerThreads)
		m[pre+"client-socket-timeout-ms"] = ms(f.ClientSocketTimeout)
		m[pre+"tcp-keepalive"] = b(f.TCPKeepAlive)
		m[pre+"tcp-keepalive-idle-seconds"] = sec(f.TCPKeepAliveIdle)
		m[pre+"tcp-keepalive-interval-seconds"] = sec(f.TCPKeepAliveInterval)
		m[pre+"tcp-keepalive-count"] = i(f.TCPKeepAliveCount)
		m[pre+"framed-transport"] = b(f.FramedTransport)
		m[pre+"max-message-size"] = strconv.FormatInt(f.MaxMessageSize, 10)
	}
	if len(c.AdditionalFrontends) > 0 {
		names := make([]string, len(c.AdditionalFrontends))
		for k, f := range c.AdditionalFrontends {
			names[k] = f.Name
		}
		m["additional-frontends"] = strings.Join(names, ",")
	}

	mg := c.Management
	m["management.enabled"] = b(mg.Enabled)
	if mg.Enabled {
		m["management.bind-host"] = mg.BindHost
		m["management.port"] = i(mg.Port)
		m["management.threads"] = i(mg.Threads)
		m["management.readiness-cache-ms"] = ms(mg.ReadinessCache)
	}

	m["routing.default-catalog"] = c.Routing.DefaultCatalog
	m["routing.catalog-db-separator"] = c.Routing.CatalogDBSeparator
	m["federation.preserve-backend-catalog-name"] = b(c.Federation.PreserveBackendCatalogName)
	m["compatibility.frontend-profile"] = string(c.Compatibility.FrontendProfile)
	if c.Compatibility.FrontendStandaloneMetastoreJar != "" {
		m["compatibility.frontend-standalone-metastore-jar"] = c.Compatibility.FrontendStandaloneMetastoreJar
	}
	if c.Compatibility.BackendStandaloneMetastoreJar != "" {
		m["compatibility.backend-standalone-metastore-jar"] = c.Compatibility.BackendStandaloneMetastoreJar
	}

	names := make([]string, len(c.Catalogs))
	for k, cat := range c.Catalogs {
		names[k] = cat.Name
		pre := "catalog." + cat.Name + "."
		for hk, v := range cat.Conf {
			lk := strings.ToLower(hk)
			if strings.Contains(lk, "password") || strings.Contains(lk, "secret") {
				v = "********"
			}
			m[pre+"conf."+hk] = v
		}
		// The settings hms-proxy interprets, under the name that was
		// used (the hive.* name when none was), with their effective value.
		setConf := func(metastoreName, hiveName, v string) {
			if _, ok := cat.Conf[metastoreName]; ok {
				m[pre+"conf."+metastoreName] = v
				return
			}
			m[pre+"conf."+hiveName] = v
		}
		setConf("metastore.thrift.uris", "hive.metastore.uris", strings.Join(cat.URIs, ","))
		setConf("metastore.client.socket.timeout", "hive.metastore.client.socket.timeout", formatHiveDuration(cat.SocketTimeout))
		setConf("metastore.client.connection.timeout", "hive.metastore.client.connection.timeout", formatHiveDuration(cat.ConnectTimeout))
		setConf("metastore.client.connect.retry.delay", "hive.metastore.client.connect.retry.delay", formatHiveDuration(cat.ConnectRetryDelay))
		setConf("metastore.client.socket.lifetime", "hive.metastore.client.socket.lifetime", formatHiveDuration(cat.SocketLifetime))
		setConf("metastore.txn.timeout", "hive.txn.timeout", formatHiveDuration(cat.TxnTimeout))
		setConf("metastore.connect.retries", "hive.metastore.connect.retries", i(cat.ConnectRetries))
		setConf("metastore.thrift.framed.transport.enabled", "hive.metastore.thrift.framed.transport.enabled", b(cat.FramedTransport))

		m[pre+"access-mode"] = string(cat.AccessMode)
		if len(cat.WriteDBWhitelist) > 0 {
			m[pre+"write-db-whitelist"] = strings.Join(cat.WriteDBWhitelist, ",")
		}
		m[pre+"expose-mode"] = string(cat.ExposeMode)
		if len(cat.ExposeDBPatterns) > 0 {
			m[pre+"expose-db-patterns"] = joinPatterns(cat.ExposeDBPatterns)
		}
		for _, r := range cat.ExposeTablePatterns {
			m[pre+"expose-table-patterns."+r.DBSource] = joinPatterns(r.Tables)
		}
		m[pre+"shared-session-pool-size"] = i(cat.SharedSessionPoolSize)
		m[pre+"latency-budget-ms"] = ms(cat.LatencyBudget)
		m[pre+"runtime-profile"] = string(cat.RuntimeProfile)
		m[pre+"impersonation-enabled"] = b(cat.ImpersonationEnabled)
		if cat.BackendStandaloneMetastoreJar != "" {
			m[pre+"backend-standalone-metastore-jar"] = cat.BackendStandaloneMetastoreJar
		}
	}
	m["catalogs"] = strings.Join(names, ",")

	sc := c.Security
	m["security.mode"] = sc.Mode
	m["security.impersonation-enabled"] = b(sc.ImpersonationEnabled)
	if sc.Mode != SecurityNone {
		m["security.server-principal"] = sc.ServerPrincipal
		m["security.keytab"] = sc.Keytab
		m["security.client-principal"] = sc.ClientPrincipal
		m["security.client-keytab"] = sc.ClientKeytab
	}

	sl := c.SyntheticLock
	if sl.StoreMode != LockStoreUnset {
		m["synthetic-read-lock.store.mode"] = sl.StoreMode
	}
	if sl.StoreMode == LockStoreZooKeeper {
		zk := sl.ZooKeeper
		const pre = "synthetic-read-lock.store.zookeeper."
		m[pre+"connect-string"] = zk.ConnectString
		m[pre+"znode"] = zk.ZNode
		m[pre+"connection-timeout-ms"] = ms(zk.ConnectionTimeout)
		m[pre+"session-timeout-ms"] = ms(zk.SessionTimeout)
		m[pre+"base-sleep-ms"] = ms(zk.BaseSleep)
		m[pre+"max-retries"] = i(zk.MaxRetries)
	}

	m["audit.enabled"] = b(c.Audit.Enabled)
	m["audit.file"] = c.Audit.File
	m["audit.max-file-size-mb"] = mb(c.Audit.MaxFileSizeBytes)
	m["audit.max-backups"] = i(c.Audit.MaxBackups)
	m["logging.level"] = c.Logging.Level
	m["logging.file"] = c.Logging.File
	m["logging.max-file-size-mb"] = mb(c.Logging.MaxFileSizeBytes)
	m["logging.max-backups"] = i(c.Logging.MaxBackups)
	m["logging.debug-tracing"] = b(c.Logging.DebugTracing)

	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		out.WriteString(escapeKey(k))
		out.WriteByte('=')
		out.WriteString(escapeValue(m[k]))
		out.WriteByte('\n')
	}
	return out.String()
}

// joinPatterns gives back the patterns as the operator wrote them.
func joinPatterns(res []*regexp.Regexp) string {
	out := make([]string, len(res))
	for k, re := range res {
		out[k] = patternSource(re)
	}
	return strings.Join(out, ",")
}

// patternSource strips the anchoring compilePattern added.
func patternSource(re *regexp.Regexp) string {
	s := re.String()
	return strings.TrimSuffix(strings.TrimPrefix(s, patternPrefix), patternSuffix)
}
