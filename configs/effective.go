package configs

import (
	"fmt"
	"sort"
	"strings"
)

// Setting is the effective value of one key of a parsed configuration.
type Setting struct {
	Key      string // the concrete key (the name the file used when it set an alias)
	Pattern  string // its registry pattern
	Value    string // canonical text; masked for secrets
	HasValue bool   // false: not set and no default
	Default  bool   // the file does not set it
	Status   Status
	Feature  string // the feature's id
}

// Settings returns every key's effective value, in registry order (within
// a key: listed catalogs and frontends in order, other instances sorted).
func (c *Config) Settings() []Setting {
	out := make([]Setting, 0, len(c.settings))
	for _, s := range c.settings {
		out = append(out, Setting{Key: s.name, Pattern: s.key.pattern, Value: maskedValue(s), HasValue: s.has,
			Default: !s.fromFile, Status: c.keyStatus(s.key), Feature: s.key.feature.id})
	}
	return out
}

func (c *Config) keyStatus(k *keyDef) Status {
	if k.ignored != "" {
		return StatusIgnored
	}
	if st, ok := c.status[k.feature.id]; ok {
		return st
	}
	return k.feature.status
}

const masked = "********"

func maskedValue(s *setting) string {
	if !s.has {
		return ""
	}
	if s.secret() {
		return masked
	}
	return maskUserinfo(s.text)
}

// maskUserinfo masks the user and password of URLs in a value
// (scheme://user:password@host...): an endpoint must not carry them, and
// one that does must not show them.
func maskUserinfo(v string) string {
	if !strings.Contains(v, "@") || !strings.Contains(v, "://") {
		return v
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		j := strings.Index(p, "://")
		if j < 0 {
			continue
		}
		rest := p[j+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			parts[i] = p[:j+3] + masked + rest[at:]
		}
	}
	return strings.Join(parts, ",")
}

// secret: a password (a key marked so, or an open conf key whose name says
// password or secret), never shown in output or messages.
func (s *setting) secret() bool {
	if s.key.secret {
		return true
	}
	lk := strings.ToLower(s.m.rest)
	return hasRest(s.key.segs) && (strings.Contains(lk, "password") || strings.Contains(lk, "secret") ||
		strings.HasSuffix(lk, "access.key") || strings.HasSuffix(lk, "session.token"))
}

// shownRaw is the value as written, for a message: masked for a secret.
func (s *setting) shownRaw() string {
	if s.secret() {
		return masked
	}
	return quoteValue(maskUserinfo(s.raw))
}

// Effective renders every key's effective value in .properties syntax,
// grouped by feature, each group headed by the feature's status. A key the
// file sets is a "key=value" line; a default in force is a commented
// "#key=value" line, and a key with no value "#key=". So the output reads
// back into the same configuration. Secrets are masked; keytab paths are
// shown.
func (c *Config) Effective() string {
	var b strings.Builder
	b.WriteString("# Effective configuration: \"key=value\" is set in the file, \"#key=value\" is the default in force,\n")
	b.WriteString("# \"#key=\" has no value. It reads back as the same configuration (secrets are masked).\n")
	byFeature := map[*feature][]*setting{}
	for _, s := range c.settings {
		byFeature[s.key.feature] = append(byFeature[s.key.feature], s)
	}
	for _, f := range c.features {
		ss := byFeature[f]
		if len(ss) == 0 {
			continue
		}
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].name < ss[j].name })
		st := c.status[f.id]
		fmt.Fprintf(&b, "\n# == %s [%s]: %s", f.title, f.id, statusText(st))
		if f.on != nil && !f.on(c) {
			fmt.Fprintf(&b, "; off: %s", f.off(c))
		}
		b.WriteByte('\n')
		for _, s := range ss {
			if s.fromFile && s.key.ignored != "" {
				fmt.Fprintf(&b, "# accepted and ignored: %s\n", s.key.ignored)
			}
			if !s.fromFile {
				b.WriteByte('#')
			}
			b.WriteString(escapeKey(s.name))
			b.WriteByte('=')
			if s.fromFile && !s.has {
				b.WriteString(escapeValue(s.raw)) // cannot happen in a valid Config; kept for completeness
			} else {
				b.WriteString(escapeValue(maskedValue(s)))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func statusText(st Status) string {
	switch st {
	case StatusRefused:
		return "refused-until-built (not built yet: a value that asks for it refuses start)"
	}
	return string(st)
}
