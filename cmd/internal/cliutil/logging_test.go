package cliutil

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/gologshim"
	"github.com/urfave/cli/v2"
)

// TestLibp2pLogsOffUnlessVerbose: go-libp2p's own loggers write nothing until
// --verbose raises their level.
func TestLibp2pLogsOffUnlessVerbose(t *testing.T) {
	if os.Getenv("GOLOG_LOG_LEVEL") != "" {
		t.Skip("GOLOG_LOG_LEVEL is set: libp2p's logging is the user's")
	}
	var buf bytes.Buffer
	SetLibp2pLogging(&buf)
	defer libp2pLevel.Set(libp2pOff)
	log := gologshim.Logger("reconcile-test")
	log.Error("an error libp2p would log")
	log.Warn("a warning libp2p would log")
	if buf.Len() != 0 {
		t.Fatalf("libp2p logged without --verbose: %q", buf.String())
	}
	// --verbose (any command) raises the level.
	app := NewApp("prog", []*cli.Command{{Name: "fail", Action: func(*cli.Context) error { return errors.New("failed") }}})
	if code := Run(app, []string{"prog", "-v", "fail"}, io.Discard, io.Discard); code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	log.Warn("a warning libp2p would log")
	if !strings.Contains(buf.String(), "a warning libp2p would log") || !strings.Contains(buf.String(), "logger=reconcile-test") {
		t.Errorf("with --verbose: %q", buf.String())
	}
}

// TestLineHandler: the peer commands log one readable line a record: the
// level as a word (none for info), no time, attributes as key=value, quoted
// when they hold spaces.
func TestLineHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLineHandler(&buf, slog.LevelInfo))
	log.Warn("source file a.bin changed: block 3 no longer matches; not serving it")
	log.With("peer", "12D3KooW").WithGroup("g").Info("dropping peer", "err", "bad block", "n", 3)
	log.Debug("not shown")
	want := "warning: source file a.bin changed: block 3 no longer matches; not serving it\n" +
		"dropping peer peer=12D3KooW g.err=\"bad block\" g.n=3\n"
	if got := buf.String(); got != want {
		t.Errorf("log\n got %q\nwant %q", got, want)
	}
}
