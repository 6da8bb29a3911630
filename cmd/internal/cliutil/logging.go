package cliutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/gologshim"
)

// libp2pLevel is the level of go-libp2p's own logs (its subsystems log through
// gologshim to stderr): off unless --verbose, whose level is verboseLibp2pLevel.
var libp2pLevel slog.LevelVar

const (
	libp2pOff          = slog.Level(100) // above every level libp2p logs at
	verboseLibp2pLevel = slog.LevelInfo
)

// SetLibp2pLogging routes go-libp2p's logs to w at libp2pLevel (off until
// --verbose). It must run before the first libp2p host is built. A user who
// sets GOLOG_LOG_LEVEL keeps libp2p's own handling of it.
func SetLibp2pLogging(w io.Writer) {
	if os.Getenv("GOLOG_LOG_LEVEL") != "" {
		return
	}
	libp2pLevel.Set(libp2pOff)
	gologshim.SetDefaultHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: &libp2pLevel}))
}

// LineHandler is the slog handler of the peer commands' own logs: one line a
// record, "warning: source file a.bin changed: ... key=value", without the
// time (the user is watching) and with the level a word a user reads (info
// lines have none).
type LineHandler struct {
	w      io.Writer
	level  slog.Leveler
	mu     *sync.Mutex
	attrs  string // formatted attributes of WithAttrs, each with its leading space
	prefix string // group prefix of WithGroup ("g.")
}

// NewLineHandler returns a LineHandler writing to w records at level or above.
func NewLineHandler(w io.Writer, level slog.Leveler) *LineHandler {
	return &LineHandler{w: w, level: level, mu: new(sync.Mutex)}
}

// Enabled reports whether l is at the handler's level or above.
func (h *LineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// Handle writes r as one line.
func (h *LineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.prefix, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a handler that adds attrs to every line.
func (h *LineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		writeAttr(&b, h.prefix, a)
	}
	h2 := *h
	h2.attrs += b.String()
	return &h2
}

// WithGroup returns a handler that prefixes the keys that follow with name.
func (h *LineHandler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.prefix += name + "."
	return &h2
}

// writeAttr writes " key=value", the value quoted if it holds spaces or quotes.
func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			writeAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		v = strconv.Quote(v)
	}
	fmt.Fprintf(b, " %s%s=%s", prefix, a.Key, v)
}
