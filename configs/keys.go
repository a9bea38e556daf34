package configs

import (
	"strings"
)

// The key names of hms-proxy.properties that this build implements. Keys
// with a per-object part are listed by their suffix.
var (
	staticKeys = []string{
		"server.name", "server.bind-host", "server.port",
		"server.min-worker-threads", "server.max-worker-threads",
		"server.client-socket-timeout-ms", "server.tcp-keepalive",
		"server.tcp-keepalive-idle-seconds", "server.tcp-keepalive-interval-seconds",
		"server.tcp-keepalive-count", "server.shutdown-timeout-seconds",
		"server.framed-transport", "server.max-message-size",
		"management.enabled", "management.bind-host", "management.port",
		"management.threads", "management.readiness-cache-ms",
		"routing.default-catalog", "routing.catalog-db-separator",
		"federation.preserve-backend-catalog-name",
		"compatibility.frontend-profile", "compatibility.frontend-standalone-metastore-jar",
		"compatibility.backend-standalone-metastore-jar",
		"catalogs", "additional-frontends",
		"security.mode", "security.server-principal", "security.keytab",
		"security.client-principal", "security.client-keytab", "security.impersonation-enabled",
		"synthetic-read-lock.store.mode",
		"synthetic-read-lock.store.zookeeper.connect-string",
		"synthetic-read-lock.store.zookeeper.znode",
		"synthetic-read-lock.store.zookeeper.connection-timeout-ms",
		"synthetic-read-lock.store.zookeeper.session-timeout-ms",
		"synthetic-read-lock.store.zookeeper.base-sleep-ms",
		"synthetic-read-lock.store.zookeeper.max-retries",
		"audit.enabled", "audit.file", "audit.max-file-size-mb", "audit.max-backups",
		"logging.level", "logging.file", "logging.max-file-size-mb", "logging.max-backups",
		"logging.debug-tracing",
	}
	// catalog.<name>.<suffix>
	catalogSuffixes = []string{
		"access-mode", "write-db-whitelist", "expose-mode", "expose-db-patterns",
		"shared-session-pool-size", "latency-budget-ms", "runtime-profile",
		"backend-standalone-metastore-jar", "impersonation-enabled",
	}
	// additional-frontends.<name>.<suffix>
	frontendSuffixes = []string{
		"port", "frontend-profile", "standalone-metastore-jar", "bind-host",
		"min-worker-threads", "max-worker-threads", "client-socket-timeout-ms",
		"tcp-keepalive", "tcp-keepalive-idle-seconds", "tcp-keepalive-interval-seconds",
		"tcp-keepalive-count", "framed-transport", "max-message-size",
	}
)

// notImplemented is the one table of keys the specification defines for
// features this build does not have yet. Such a key is accepted (its value
// syntax is still checked where the kind of value is obvious from the name:
// booleans and numbers) and reported as a Warning, never silently dropped.
//
// Pattern syntax: dot-separated segments; "<name>" stands for one segment
// (a catalog name); a final "*" stands for one or more further segments.
var notImplemented = []struct {
	Pattern, Feature string
}{
	{"rate-limit.*", "rate limiting"},
	{"routing.circuit-breaker.*", "circuit breaker"},
	{"routing.backend-state-polling.*", "background backend polling"},
	{"routing.adaptive-timeout.*", "adaptive backend timeout"},
	{"routing.hedged-read.*", "hedged fan-out reads"},
	{"routing.degraded-routing-policy", "degraded routing"},
	{"routing.database-list-cache.*", "database list cache"},
	{"routing.database-metadata-cache.*", "database metadata cache"},
	{"routing.database-cache.*", "database cache background refresh"},
	{"routing.refresh-privileges.*", "synthetic refresh_privileges"},
	{"routing.iceberg-pointer-guard.*", "Iceberg pointer guard"},
	{"guard.*", "transactional DDL guard"},
	{"rest-catalog.*", "Iceberg REST catalog listener"},
	{"ranger.*", "Apache Ranger authorization"},
	{"catalog.<name>.ranger.*", "Apache Ranger authorization"},
	{"catalog.<name>.impersonation-max-clients", "Kerberos impersonation"},
	{"catalog.<name>.impersonation-client-idle-ttl-ms", "Kerberos impersonation"},
	{"catalog.<name>.impersonation-pool-max-size", "Kerberos impersonation"},
	{"catalog.<name>.impersonation-session-idle-ttl-ms", "Kerberos impersonation"},
	{"security.front-door-conf.*", "front-door HiveConf (delegation tokens, proxy-user rules)"},
	{"security.service-principals", "service principals"},
	{"security.service-principals.*", "service principals"},
	{"federation.view-text-rewrite.*", "view SQL rewrite"},
	{"federation.external-table-drop-purge.*", "external table drop purge"},
}

// notImplementedConf lists catalog.<name>.conf.* keys that are proxy hooks,
// not Hive client settings; they stay in CatalogConfig.Conf but are reported.
var notImplementedConf = []struct {
	Prefix, Feature string
}{
	{"hms.proxy.external-table-drop-purge.", "external table drop purge"},
}

// matchKeyPattern reports whether key matches a notImplemented pattern.
func matchKeyPattern(pattern, key string) bool {
	ps := strings.Split(pattern, ".")
	ks := strings.Split(key, ".")
	for i, p := range ps {
		if p == "*" && i == len(ps)-1 {
			return len(ks) > i && ks[i] != ""
		}
		if i >= len(ks) {
			return false
		}
		switch p {
		case "<name>":
			if ks[i] == "" {
				return false
			}
		default:
			if ks[i] != p {
				return false
			}
		}
	}
	return len(ks) == len(ps)
}

func lookupNotImplemented(key string) (feature string, ok bool) {
	for _, n := range notImplemented {
		if matchKeyPattern(n.Pattern, key) {
			return n.Feature, true
		}
	}
	return "", false
}

type valueKind int

const (
	kindAny valueKind = iota
	kindBool
	kindCount  // non-negative integer
	kindNumber // non-negative decimal number
)

// notImplementedKind guesses the kind of value of a recognised-but-not-
// implemented key from its last segment, for the obvious cases only.
func notImplementedKind(key string) valueKind {
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch {
	case last == "enabled" || strings.HasSuffix(last, "-enabled") ||
		last == "shared-across-users" || last == "synthetic-success" ||
		last == "preserve-original-text" || last == "hive-engine-descriptor":
		return kindBool
	case strings.HasSuffix(last, "-ms") || strings.HasSuffix(last, "-seconds") ||
		last == "port" || last == "burst" || last == "max-entries" || last == "max-parallelism" ||
		last == "failure-threshold" || last == "max-clients" || last == "max-size" || last == "max-retries":
		return kindCount
	case last == "requests-per-second" || last == "multiplier" || last == "alpha":
		return kindNumber
	}
	return kindAny
}

// suggest returns the candidate closest to key by edit distance when it is
// close enough to be a likely typo, or "".
func suggest(key string, candidates []string) string {
	best, bestD := "", -1
	lk := strings.ToLower(key)
	for _, c := range candidates {
		if c == key {
			continue
		}
		d := editDistance(lk, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := len(key) / 4
	if limit < 2 {
		limit = 2
	}
	if limit > 4 {
		limit = 4
	}
	if bestD >= 0 && bestD <= limit {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance of two byte strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
