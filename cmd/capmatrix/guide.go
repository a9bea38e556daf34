package main

import (
	"errors"
	"fmt"
	"strings"
)

// The markers of GuideFile the capability table is written between.
const (
	BeginMarker = "<!-- capabilities:begin -->"
	EndMarker   = "<!-- capabilities:end -->"
)

// errNoMarkers: the document has neither marker.
var errNoMarkers = errors.New("no capability markers")

// spliceGuide replaces what lies between the markers with section; nothing
// outside them changes. Both markers must appear exactly once, begin first,
// each on a line of its own.
func spliceGuide(name, doc, section string) (string, error) {
	nb, ne := strings.Count(doc, BeginMarker), strings.Count(doc, EndMarker)
	if nb == 0 && ne == 0 {
		return "", fmt.Errorf("%s: %w: add a line %s and a line %s where the capability table belongs", name, errNoMarkers, BeginMarker, EndMarker)
	}
	if nb != 1 || ne != 1 {
		return "", fmt.Errorf("%s: want exactly one %s and one %s, found %d and %d", name, BeginMarker, EndMarker, nb, ne)
	}
	b, e := strings.Index(doc, BeginMarker), strings.Index(doc, EndMarker)
	if e < b {
		return "", fmt.Errorf("%s: %s comes before %s", name, EndMarker, BeginMarker)
	}
	head, tail := doc[:b+len(BeginMarker)], doc[e:]
	if !strings.HasPrefix(doc[b+len(BeginMarker):], "\n") || (e > 0 && doc[e-1] != '\n') {
		return "", fmt.Errorf("%s: %s and %s must each stand on a line of their own", name, BeginMarker, EndMarker)
	}
	return head + "\n" + section + tail, nil
}
