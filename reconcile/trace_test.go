package reconcile

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.golden from the current output")

// traceConn is the trace's [Sender]: it queues the messages a side sends until
// traceRun delivers them.
type traceConn struct {
	msgs []Message
	wire [][]byte
}

func (c *traceConn) Send(m *Message, encoded []byte) error {
	c.msgs = append(c.msgs, *m)
	c.wire = append(c.wire, bytes.Clone(encoded))
	return nil
}

func (c *traceConn) Flush() error { return nil }

// traceRun drives a and b like Run, each by a Driver, writing one line per
// message as it is delivered: direction, type, encoded size and the fields that
// matter. The golden file pins the message flow and the wire sizes, so schema
// changes show up in review.
func traceRun(w *strings.Builder, a, b *Session) {
	if err := a.Start(); err != nil {
		fmt.Fprintf(w, "start: %v\n", err)
		return
	}
	names := map[*Session]string{a: "A", b: "B"}
	conns := map[*Session]*traceConn{a: {}, b: {}}
	drivers := map[*Session]*Driver{a: NewDriver(a, conns[a], Limits{}), b: NewDriver(b, conns[b], Limits{})}
	if err := drivers[a].Flush(); err != nil {
		fmt.Fprintf(w, "encode: %v\n", err)
		return
	}
	for round := 0; round < 20 && !(a.Done() && b.Done()); round++ {
		for _, pair := range [][2]*Session{{a, b}, {b, a}} {
			from, to := pair[0], pair[1]
			c := conns[from]
			msgs, wire := c.msgs, c.wire
			c.msgs, c.wire = nil, nil
			for i, m := range msgs {
				fmt.Fprintf(w, "%s->%s %-6v %6d B", names[from], names[to], m.Type, len(wire[i]))
				switch m.Type {
				case MsgFilter:
					fmt.Fprintf(w, " %v universe=%d set=%d reply=%v %v", m.Filter.Method, m.Filter.Universe, m.Filter.SetSize, m.Filter.Reply, m.Filter.Params)
				case MsgOffer, MsgBlocks, MsgWant:
					fmt.Fprintf(w, " blocks=%d", len(m.Indices))
				case MsgMore:
					fmt.Fprintf(w, " cells=%d", m.Cells)
				case MsgReject:
					fmt.Fprintf(w, " %q", m.Reason)
				}
				fmt.Fprintln(w)
				if err := drivers[to].Receive(wire[i]); err != nil {
					if _, ok := errors.AsType[*ConnError](err); ok || !to.Done() {
						fmt.Fprintf(w, "deliver: %v\n", err)
						return
					}
					fmt.Fprintf(w, "%s: %v\n", names[to], err)
				}
			}
		}
	}
	for _, s := range []*Session{a, b} {
		o := s.Outcome()
		fmt.Fprintf(w, "%s: done=%v held=%d sent=%d received=%d redundant=%d decoded=%v wire=%d",
			names[s], s.Done(), s.Held().Len(), o.Sent, o.Received, o.Redundant, o.Decoded, o.WireBytes())
		if o.Cells > 0 {
			fmt.Fprintf(w, " cells=%d", o.Cells)
		}
		fmt.Fprintln(w)
	}
}

func TestTrace(t *testing.T) {
	const u = 600
	a, b := NewSet(u), NewSet(u)
	for i := range 400 {
		a.Add(i)
		b.Add(u - 1 - i)
	}
	uv, _ := NewUniverse(u)
	code, err := erasure.New(300, u, 64)
	if err != nil {
		t.Fatal(err)
	}
	src := make([][]byte, 300)
	for i := range src {
		src[i] = blockData(i, 64)
	}
	coded, _ := code.Encode(src)
	store := func(s *Set) *MemBlocks {
		st := NewMemBlocks(u, 64)
		for _, i := range s.Indices() {
			st.Put(i, coded[i])
		}
		return st
	}
	scenarios := []struct {
		name       string
		cfgA, cfgB Config
		blocks     bool
	}{
		{"complete two-way, offers", Config{}, Config{}, false},
		{"complete one-way, blocks", Config{OneWay: true}, Config{}, true},
		{"complete, sha1 and a seed", Config{Hash: cbfalgebra.HashSHA1, Seed: 9, M: 4096, K: 4}, Config{Hash: cbfalgebra.HashSHA1, Seed: 9}, false},
		{"byers one-way, decode", Config{Method: Byers, OneWay: true, Code: code}, Config{Method: Byers, Code: code}, true},
		{"non-homologous: other seed", Config{}, Config{Seed: 1}, false},
		{"other method", Config{}, Config{Method: Byers}, false},
		{"bitfield two-way, offers", Config{Method: Bitfield}, Config{Method: Bitfield}, false},
		{"bitfield one-way, blocks", Config{Method: Bitfield, OneWay: true}, Config{Method: Bitfield}, true},
		{"iblt one-way, blocks (batches until decoded)", Config{Method: IBLT, OneWay: true}, Config{Method: IBLT}, true},
		{"iblt two-way, offers, 512 cells first", Config{Method: IBLT, IBLTCells: 512}, Config{Method: IBLT}, false},
		{"iblt, other seed", Config{Method: IBLT}, Config{Method: IBLT, Seed: 1}, false},
		{"ccbf two-way, offers", Config{Method: CCBF}, Config{Method: CCBF}, false},
	}
	var out strings.Builder
	for _, sc := range scenarios {
		fmt.Fprintf(&out, "# %s\n", sc.name)
		var sa, sb Blocks
		if sc.blocks {
			sa, sb = store(a), store(b)
		}
		A, err := NewSession(1, sc.cfgA, uv, a, sa)
		if err != nil {
			t.Fatal(err)
		}
		B, err := NewSession(1, sc.cfgB, uv, b, sb)
		if err != nil {
			t.Fatal(err)
		}
		traceRun(&out, A, B)
		out.WriteString("\n")
	}
	golden := filepath.Join("testdata", "trace.golden")
	if *rewrite {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTrace -rewrite)", err)
	}
	if out.String() != string(want) {
		t.Fatalf("trace differs from %s (go test -run TestTrace -rewrite to accept):\n%s", golden, out.String())
	}
}
