package configs

import (
	"errors"
	"fmt"
	"strings"
)

// KeyReferenceFile is the document that holds the generated key reference,
// relative to the repository root.
const KeyReferenceFile = "docs/configuration.md"

// The markers around the generated key reference in KeyReferenceFile.
const (
	KeyReferenceBegin = "<!-- BEGIN KEY REFERENCE: generated from the registry by `go run ./configs/cmd/keydoc -write`; do not edit -->"
	KeyReferenceEnd   = "<!-- END KEY REFERENCE -->"
)

// KeyReference renders the registry as the key reference of
// KeyReferenceFile: one table per feature, in parse order, with each key's
// type, default, status and meaning.
func KeyReference() string {
	var b strings.Builder
	b.WriteString("Every key hms-proxy knows, by feature (the status of a feature is its build's: see\n")
	b.WriteString("[Key status](#key-status)). **(hms-proxy)** marks keys the Java proxy does not have.\n")
	for _, f := range reg.features {
		fmt.Fprintf(&b, "\n### %s (`%s`): %s\n\n", f.title, f.id, f.status)
		b.WriteString("| key | type | default | status | meaning |\n|---|---|---|---|---|\n")
		for _, k := range f.keys {
			name := "`" + k.pattern + "`"
			if k.isNew {
				name += " **(hms-proxy)**"
			}
			meaning := k.meaning
			if len(k.aliases) > 0 {
				var as []string
				for _, a := range k.aliases {
					as = append(as, "`"+a.pattern+"`")
				}
				meaning += "; also written " + strings.Join(as, ", ")
			}
			if k.ignored != "" {
				meaning += ". Not needed: " + k.ignored
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, cell(k.typ.doc()), cell(defaultDoc(k)), cell(keyStatusDoc(k)), cell(meaning))
		}
	}
	return b.String()
}

func defaultDoc(k *keyDef) string {
	switch {
	case k.defDoc != "":
		return k.defDoc
	case k.defOf != "":
		return "`" + k.defOf + "`"
	case k.def != "":
		return "`" + k.def + "`"
	case k.required != "":
		return "required"
	}
	return "—"
}

func keyStatusDoc(k *keyDef) string {
	if k.ignored != "" {
		return string(StatusIgnored)
	}
	if k.feature.status != StatusRefused {
		return string(k.feature.status)
	}
	switch k.gate {
	case gateAlways:
		return "refused-until-built: refused when set"
	case gateNonDefault:
		ok := []string{}
		if k.def != "" {
			ok = append(ok, "`"+k.def+"`")
		} else if k.defOf != "" || k.defFunc != nil {
			ok = append(ok, "its default")
		}
		for _, n := range k.neutral {
			ok = append(ok, "`"+n+"`")
		}
		if _, isBool := k.typ.(boolT); isBool && k.def != "false" {
			ok = append(ok, "`false`")
		}
		if len(ok) == 0 {
			return "refused-until-built: refused when set"
		}
		return "refused-until-built: only " + strings.Join(ok, ", ") + " accepted"
	}
	return "refused-until-built: accepted, no effect yet"
}

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// SpliceKeyReference replaces the text between the key reference markers of
// a document with KeyReference().
func SpliceKeyReference(doc string) (string, error) {
	i := strings.Index(doc, KeyReferenceBegin)
	j := strings.Index(doc, KeyReferenceEnd)
	if i < 0 || j < i {
		return "", errors.New("no key reference markers (" + KeyReferenceBegin + " … " + KeyReferenceEnd + ")")
	}
	return doc[:i+len(KeyReferenceBegin)] + "\n\n" + KeyReference() + "\n" + doc[j:], nil
}
