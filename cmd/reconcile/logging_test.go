package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/gologshim"
)

// TestLibp2pLogsOffUnlessVerbose: go-libp2p's own loggers write nothing until
// --verbose raises their level.
func TestLibp2pLogsOffUnlessVerbose(t *testing.T) {
	if os.Getenv("GOLOG_LOG_LEVEL") != "" {
		t.Skip("GOLOG_LOG_LEVEL is set: libp2p's logging is the user's")
	}
	var buf bytes.Buffer
	setLibp2pLogging(&buf)
	defer libp2pLevel.Set(libp2pOff)
	log := gologshim.Logger("reconcile-test")
	log.Error("an error libp2p would log")
	log.Warn("a warning libp2p would log")
	if buf.Len() != 0 {
		t.Fatalf("libp2p logged without --verbose: %q", buf.String())
	}
	// --verbose (any command) raises the level.
	if code, _, _ := runCLI(t, "-v", "chunk", "/nonexistent/x"); code != exitFailure {
		t.Fatalf("exit %d", code)
	}
	log.Warn("a warning libp2p would log")
	if !strings.Contains(buf.String(), "a warning libp2p would log") || !strings.Contains(buf.String(), "logger=reconcile-test") {
		t.Errorf("with --verbose: %q", buf.String())
	}
}
