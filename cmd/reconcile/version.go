package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// The release build (scripts/release.sh) sets these with -ldflags "-X
// main.version=v1.2.3 -X main.commit=HASH -X main.date=TIME"; they take the
// place of the build information's module version and VCS settings, which a
// -trimpath release build from an archive may not have.
var (
	version string
	commit  string
	date    string
)

// versionString describes this build from its build information: the module
// and its version, the VCS revision and time (or why there is none), and Go's
// version. "go build" in a git checkout records the revision; "go run", "go
// test" and -buildvcs=false do not; "go install ...@VERSION" records the
// version; a release build records all from its -ldflags.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{Main: debug.Module{Path: "github.com/reconcile-p2p/reconcile/cmd"}}
	}
	return formatVersion(bi, version, commit, date)
}

// formatVersion describes the build bi; a non-empty setVersion, setCommit or
// setDate (from -ldflags -X) replaces the module version, VCS revision or
// VCS time.
func formatVersion(bi *debug.BuildInfo, setVersion, setCommit, setDate string) string {
	version := bi.Main.Version
	if setVersion != "" {
		version = setVersion
	}
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if setCommit != "" {
		rev, modified = setCommit, false
	}
	if setDate != "" {
		when = setDate
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s (module %s)", version, bi.Main.Path)
	switch {
	case rev == "":
		b.WriteString(", revision unknown (built without VCS information)")
	default:
		if len(rev) > 12 {
			rev = rev[:12]
		}
		fmt.Fprintf(&b, ", revision %s", rev)
		if modified {
			b.WriteString("+modified")
		}
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
	}
	if bi.GoVersion != "" {
		fmt.Fprintf(&b, ", %s", bi.GoVersion)
	}
	return b.String()
}
