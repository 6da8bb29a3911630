package testnet

import (
	"bytes"
	"strings"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// TestTracer checks the trace's lines: the plan (roles, tree places), the
// nodes' events, and blocks sent and pushed, each on its own line.
func TestTracer(t *testing.T) {
	var buf bytes.Buffer
	tr := tracestats.NewWriter(&buf, map[lpeer.ID]int{"a": 1, "b": 2}, clock.Real())
	// A push before the fetches begin comes right after the start line,
	// at a negative time.
	tr.Served(0, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "a", Index: 1, Pushed: true})
	time.Sleep(time.Millisecond)
	tr.Begin(time.Now(), "complete", 0, 15, 6.71)
	roles := []role{{}, {liar: true, lie: LiarCorrupt}, {leaveAt: 0.5, rejoin: true}, {lateAt: 0.25}}
	trees := &stripes.Trees{Roots: []int{1}, Kids: [][][]int32{{nil, {2, 3}, nil, nil}}}
	traceRoles(tr, roles)
	tr.Parents(trees)
	tr.Event("left", 2)
	tr.Served(1, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "b", Index: 7})
	tr.Served(1, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "b", Index: 8, Pushed: true})
	tr.Served(2, peer.ServeEvent{Kind: peer.EventBusy, Peer: "x"})
	tr.Served(2, peer.ServeEvent{Kind: peer.EventAdopted, Peer: "a", Index: 3})
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[0] == "pushed" && f[3] == "1" && !strings.HasPrefix(f[1], "-") {
			t.Errorf("a push before the start: time %s, want a negative one", f[1])
		}
		if len(f) > 1 && (f[0] == "left" || f[0] == "sent" || f[0] == "pushed" || f[0] == "busy" || f[0] == "adopted") {
			f[1] = "T" // times vary
		}
		got = append(got, strings.Join(f, " "))
	}
	want := []string{
		"start complete 0 15 6.7100",
		"pushed T 0 1 1",
		"role 1 liar " + LiarCorrupt.String(),
		"role 2 leave 0.500 true",
		"role 3 late 0.250",
		"parent 0 2 1",
		"parent 0 3 1",
		"left T 2",
		"sent T 1 2 7",
		"pushed T 1 2 8",
		"busy T 2 -1",
		"adopted T 2 1 3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var none *tracestats.Writer // a run without a trace: no-ops
	traceRoles(none, roles)
	none.Parents(trees)
	none.Event("done", 1)
}

// TestTraceRoundTrip reads what a Writer wrote: the reader knows every
// line the writer writes, and a push before the fetches began counts.
func TestTraceRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	tr := tracestats.NewWriter(&buf, map[lpeer.ID]int{"a": 1, "b": 2, "c": 3}, clock.Real())
	tr.Served(0, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "a", Index: 0, Pushed: true})
	tr.Begin(time.Now(), "complete", 0, 15, 6.71)
	traceRoles(tr, []role{{}, {}, {}, {liar: true, lie: LiarPhantom}})
	tr.Parents(&stripes.Trees{Roots: []int{1}, Kids: [][][]int32{{nil, {2}, nil, nil}}})
	tr.Served(1, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "b", Index: 0, Pushed: true})
	tr.Served(0, peer.ServeEvent{Kind: peer.EventBlockSent, Peer: "b", Index: 1})
	tr.Served(0, peer.ServeEvent{Kind: peer.EventAnswered, Peer: "b"})
	tr.Served(0, peer.ServeEvent{Kind: peer.EventBusy, Peer: "c"})
	tr.Served(1, peer.ServeEvent{Kind: peer.EventAdopted, Peer: "b", Index: 0})
	tr.Event("done", 2)
	tr.Event("done", 1)
	if err := tr.Flush(); err != nil {
		t.Fatal(err)
	}
	runs, err := tracestats.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	st := runs[0]
	if st.Scale != 15 || st.TStarS != 6.71 || st.Liars != 1 || st.Stayed != 2 || st.SeedPushed != 1 || st.SeedSent != 1 ||
		st.Before.Pushed != 2 || st.Before.Fetched != 1 || len(st.Stripes) != 1 {
		t.Errorf("stats: %+v", st)
	}
}
