package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/libp2p/go-libp2p/gologshim"
)

// libp2pLevel is the level of go-libp2p's own logs (its subsystems log through
// gologshim to stderr): off unless --verbose, whose level is verboseLibp2pLevel.
var libp2pLevel slog.LevelVar

const (
	libp2pOff          = slog.Level(100) // above every level libp2p logs at
	verboseLibp2pLevel = slog.LevelInfo
)

// setLibp2pLogging routes go-libp2p's logs to w at libp2pLevel (off until
// --verbose). It must run before the first libp2p host is built. A user who
// sets GOLOG_LOG_LEVEL keeps libp2p's own handling of it.
func setLibp2pLogging(w io.Writer) {
	if os.Getenv("GOLOG_LOG_LEVEL") != "" {
		return
	}
	libp2pLevel.Set(libp2pOff)
	gologshim.SetDefaultHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: &libp2pLevel}))
}
