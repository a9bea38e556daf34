package gssapi

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// LoadKeytab reads a keytab file; the error names the file and what is wrong
// with it (missing, unreadable, not a keytab).
func LoadKeytab(path string) (*keytab.Keytab, error) {
	if path == "" {
		return nil, fmt.Errorf("gssapi: no keytab file given")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gssapi: reading keytab %s: %w", path, err)
	}
	kt := keytab.New()
	if err := kt.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("gssapi: keytab %s is not a valid keytab: %w", path, err)
	}
	if len(kt.Entries) == 0 {
		return nil, fmt.Errorf("gssapi: keytab %s holds no keys", path)
	}
	return kt, nil
}

// SplitPrincipal splits "name/host@REALM" into "name/host" and "REALM". The
// realm is required.
func SplitPrincipal(p string) (name, realm string, err error) {
	i := strings.LastIndexByte(p, '@')
	if p == "" {
		return "", "", fmt.Errorf("principal is empty")
	}
	if i <= 0 || i == len(p)-1 {
		return "", "", fmt.Errorf("principal %q has no realm (want name/host@REALM)", p)
	}
	return p[:i], p[i+1:], nil
}

func keytabHas(kt *keytab.Keytab, pn types.PrincipalName, realm string) bool {
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == pn.PrincipalNameString() {
			return true
		}
	}
	return false
}

func keytabPrincipals(kt *keytab.Keytab) string {
	set := map[string]bool{}
	for _, e := range kt.Entries {
		set[e.Principal.String()] = true
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(nothing)"
	}
	return strings.Join(out, ", ")
}
