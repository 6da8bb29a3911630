package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// versionString describes this build from its build information: the module
// and its version, the VCS revision and time (or why there is none), and Go's
// version. "go build" in a git checkout records the revision; "go run", "go
// test" and -buildvcs=false do not.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "reconcile (no build information)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	version := bi.Main.Version
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
	fmt.Fprintf(&b, ", %s", bi.GoVersion)
	return b.String()
}
