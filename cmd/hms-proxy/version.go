package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Release builds name themselves with the linker:
//
//	go build -ldflags "-X main.version=v1.4.0 -X main.revision=$(git rev-parse HEAD) \
//	    -X main.buildTime=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/hms-proxy
//
// Only the linker writes these; the program reads them once, in
// readBuildInfo. Empty means "not set": the build information the Go
// toolchain embeds (module version, VCS revision and commit time) is used.
var (
	version   string
	revision  string
	buildTime string
)

// linkerInfo is what -ldflags -X set.
type linkerInfo struct{ version, revision, buildTime string }

// buildInfo is what `hms-proxy version` prints.
type buildInfo struct {
	Version    string // release version, module version, or "devel"
	Module     string // main module path
	Revision   string // VCS revision, "" when unknown
	Modified   bool   // the VCS tree had uncommitted changes (only for a VCS-stamped revision)
	CommitTime string // time of that revision (VCS), "" when unknown
	BuildTime  string // set by release builds only
	GoVersion  string
	Platform   string   // GOOS/GOARCH
	Flags      []string // build settings that matter to an operator (CGO_ENABLED, -trimpath, GOAMD64, ...)
}

// readBuildInfo merges the toolchain's build information with the linker
// overrides: a value set with -X wins over the embedded one.
func readBuildInfo(bi *debug.BuildInfo, ok bool, ld linkerInfo) buildInfo {
	out := buildInfo{Version: "devel", Module: "github.com/hms-proxy/hms-proxy"}
	if ok && bi != nil {
		if bi.Main.Path != "" {
			out.Module = bi.Main.Path
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			out.Version = v
		}
		out.GoVersion = bi.GoVersion
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				out.Revision = s.Value
			case "vcs.time":
				out.CommitTime = s.Value
			case "vcs.modified":
				out.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			case "CGO_ENABLED", "GOAMD64", "GOARM64", "GOARM", "GOEXPERIMENT", "-tags":
				out.Flags = append(out.Flags, s.Key+"="+s.Value)
			case "-trimpath", "-race":
				if s.Value == "true" {
					out.Flags = append(out.Flags, s.Key)
				}
			}
		}
		if goos != "" || goarch != "" {
			out.Platform = goos + "/" + goarch
		}
	}
	if ld.version != "" {
		out.Version = ld.version
	}
	if ld.revision != "" && ld.revision != out.Revision {
		out.Revision, out.Modified = ld.revision, false
	}
	if ld.buildTime != "" {
		out.BuildTime = ld.buildTime
	}
	return out
}

// currentBuildInfo is the build information of this binary.
func currentBuildInfo() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	return readBuildInfo(bi, ok, linkerInfo{version: version, revision: revision, buildTime: buildTime})
}

// write prints the version line first (what scripts read) and then one
// "name: value" line per fact.
func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "hms-proxy %s\n", b.Version)
	fmt.Fprintf(w, "module:      %s\n", b.Module)
	rev := b.Revision
	switch {
	case rev == "":
		rev = "unknown (no VCS information in this build; release builds set -ldflags -X main.revision=...)"
	case b.Modified:
		rev += " (modified: built with uncommitted changes)"
	}
	fmt.Fprintf(w, "revision:    %s\n", rev)
	if b.CommitTime != "" {
		fmt.Fprintf(w, "commit time: %s\n", b.CommitTime)
	}
	if b.BuildTime != "" {
		fmt.Fprintf(w, "build time:  %s\n", b.BuildTime)
	}
	goLine := b.GoVersion
	if goLine == "" {
		goLine = "unknown"
	}
	if b.Platform != "" {
		goLine += " " + b.Platform
	}
	fmt.Fprintf(w, "go:          %s\n", goLine)
	if len(b.Flags) > 0 {
		fmt.Fprintf(w, "build:       %s\n", strings.Join(b.Flags, " "))
	}
}
