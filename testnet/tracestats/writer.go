package tracestats

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// Writer writes a trace (testnet.Config.Trace): a line for what each node serves, with the
// seconds since the fetches began (negative before), so that a run's
// schedule can be studied afterwards (who sent which block when, which
// answers offered what):
//
//	start METHOD SEED SCALE TSTAR            the fetches begin; SEED is the seed's node (-1: none), SCALE
//	                                         the time scale, TSTAR T* in described seconds (0: none)
//	sent T FROM TO UNIT                      node FROM wrote unit UNIT to node TO
//	answered T FROM TO FOUND OFFERED         node FROM answered a reconciliation of node TO
//	busy T FROM TO                           node FROM turned a request of node TO away "busy"
//	pushed T FROM TO UNIT                    node FROM pushed unit UNIT to its child TO (stripe trees)
//	adopted T FROM TO STRIPE                 node FROM adopted node TO in stripe STRIPE (stripe trees)
//	role N liar KIND | leave AT REJOIN | late AT   node N's part in the run (churn and liars)
//	parent S CHILD PARENT                    in stripe S, CHILD's parent is PARENT (stripe trees)
//	joined|left|back|done T N                node N joined late, left, came back, ended its fetching
//
// TO is -1 for a peer outside the run.
//
// The lines are kept in memory and written out when the run ends, so that
// writing them never holds up the peers (a serving goroutine tells the
// tracer of each block it sends). Lines of what happened before the
// fetches began (a seed's first pushes down stripe trees) come right after
// the start line, with their negative times.
type Writer struct {
	clk   clock.Clock
	mu    sync.Mutex
	buf   bytes.Buffer
	out   io.Writer
	index map[lpeer.ID]int
	start time.Time // zero until begin
	early []earlyLine
}

// earlyLine is a timed line from before begin: its time is known only
// then.
type earlyLine struct {
	at     time.Time
	format string // the time's verb first
	args   []any
}

// NewWriter returns a Writer writing to w, or nil when w is nil; index
// numbers the run's peers, clk is the run's clock. A nil Writer's methods do
// nothing.
func NewWriter(w io.Writer, index map[lpeer.ID]int, clk clock.Clock) *Writer {
	if w == nil {
		return nil
	}
	return &Writer{out: w, index: index, clk: clk}
}

// timed writes a line whose first verb is its time, in seconds since the
// fetches began (t.mu held).
func (t *Writer) timed(format string, args ...any) {
	now := t.clk.Now()
	if t.start.IsZero() {
		t.early = append(t.early, earlyLine{at: now, format: format, args: args})
		return
	}
	fmt.Fprintf(&t.buf, format, append([]any{now.Sub(t.start).Seconds()}, args...)...)
}

// Begin marks the start of the fetches, of a run at time scale scale
// whose T* is tstar (described seconds, 0: none).
func (t *Writer) Begin(at time.Time, method string, seed int, scale, tstar float64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = at
	fmt.Fprintf(&t.buf, "start %s %d %g %.4f\n", method, seed, scale, tstar)
	for _, l := range t.early {
		fmt.Fprintf(&t.buf, l.format, append([]any{l.at.Sub(at).Seconds()}, l.args...)...)
	}
	t.early = nil
}

// Served writes what node from served.
func (t *Writer) Served(from int, ev peer.ServeEvent) {
	to, ok := t.index[ev.Peer]
	if !ok {
		to = -1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case peer.EventBlockSent:
		if ev.Pushed {
			t.timed("pushed %.4f %d %d %d\n", from, to, ev.Index)
			break
		}
		t.timed("sent %.4f %d %d %d\n", from, to, ev.Index)
	case peer.EventAnswered:
		t.timed("answered %.4f %d %d %d %d\n", from, to, len(ev.Found), len(ev.Offered))
	case peer.EventBusy:
		t.timed("busy %.4f %d %d\n", from, to)
	case peer.EventAdopted:
		t.timed("adopted %.4f %d %d %d\n", from, to, ev.Index)
	}
}

// Line writes a line of its own (the run's plan), without a time.
func (t *Writer) Line(format string, a ...any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(&t.buf, format+"\n", a...)
}

// Event writes that node i did what (joined, left, back, done) now.
func (t *Writer) Event(what string, i int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timed(what+" %.4f %d\n", i)
}

// Parents writes each node's place in the stripe trees: "parent S CHILD
// PARENT" lines.
func (t *Writer) Parents(trees *stripes.Trees) {
	if t == nil || trees == nil {
		return
	}
	for s, kids := range trees.Kids {
		for p, cs := range kids {
			for _, c := range cs {
				t.Line("parent %d %d %d", s, c, p)
			}
		}
	}
}

// Flush writes out the lines so far.
func (t *Writer) Flush() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.buf.WriteTo(t.out)
	return err
}
