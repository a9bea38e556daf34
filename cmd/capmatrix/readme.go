package main

import (
	"errors"
	"fmt"
	"strings"
)

// The README markers the capability table is written between.
const (
	BeginMarker = "<!-- capabilities:begin -->"
	EndMarker   = "<!-- capabilities:end -->"
)

// errNoMarkers: the README has neither marker (nothing to update).
var errNoMarkers = errors.New("no capability markers")

// spliceReadme replaces what lies between the markers with section; nothing
// outside them changes. Both markers must appear exactly once, begin first,
// each on a line of its own.
func spliceReadme(name, readme, section string) (string, error) {
	nb, ne := strings.Count(readme, BeginMarker), strings.Count(readme, EndMarker)
	if nb == 0 && ne == 0 {
		return "", fmt.Errorf("%s: %w: add a line %s and a line %s where the capability table belongs", name, errNoMarkers, BeginMarker, EndMarker)
	}
	if nb != 1 || ne != 1 {
		return "", fmt.Errorf("%s: want exactly one %s and one %s, found %d and %d", name, BeginMarker, EndMarker, nb, ne)
	}
	b, e := strings.Index(readme, BeginMarker), strings.Index(readme, EndMarker)
	if e < b {
		return "", fmt.Errorf("%s: %s comes before %s", name, EndMarker, BeginMarker)
	}
	head, tail := readme[:b+len(BeginMarker)], readme[e:]
	if !strings.HasPrefix(readme[b+len(BeginMarker):], "\n") || (e > 0 && readme[e-1] != '\n') {
		return "", fmt.Errorf("%s: %s and %s must each stand on a line of their own", name, BeginMarker, EndMarker)
	}
	return head + "\n" + section + tail, nil
}
