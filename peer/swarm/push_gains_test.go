package swarm

import (
	"bytes"
	"sync"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// bufStream is a stream that writes into w, reads from r, takes any
// deadline and ignores a reset.
type bufStream struct {
	readStream
	mu sync.Mutex
	w  bytes.Buffer
}

func (s *bufStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *bufStream) SetWriteDeadline(time.Time) error { return nil }

func (s *bufStream) Reset() error { return nil }

// TestGainsTold: a child tells its parent in a stripe the blocks of that
// stripe it asks of other peers, not those it asks of the parent nor
// those of a stripe whose parent did not ask; the parent marks them held
// and does not push them.
func TestGainsTold(t *testing.T) {
	dir := t.TempDir()
	m := manifestOf(t, writeRandomFile(t, dir, "data.bin", 128<<10, 7))
	p := newTestNode(t)
	c := emptyContent(t, m, t.TempDir())
	child := NewTrees(p, c, Stripes{Parents: []lpeer.ID{"parent", "quiet"}}, time.Second)
	g := &gainTell{wake: make(chan struct{}, 1)}
	child.tells["parent"] = g       // as ServePush registers a push stream that asks
	child.fetchingFrom("other", 0)  // stripe 0, from another peer: told
	child.fetchingFrom("parent", 2) // asked of the parent: not told
	child.fetchingFrom("other", 1)  // stripe 1: its parent did not ask
	child.fetchingFrom("other", 4)  // told
	s := &bufStream{}
	ss := serve.NewStream(s, c, 0, clock.Real())
	done := make(chan struct{})
	told := make(chan struct{})
	go func() { defer close(told); child.tellGains(ss, "parent", g, done) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.w.Len()
		s.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	close(done)
	<-told
	if child.tells["parent"] != nil {
		t.Error("the parent's queue is still registered after its stream ended")
	}

	// The parent reads the child's have frames.
	parent := NewTrees(p, c, Stripes{Parents: []lpeer.ID{"", ""}}, time.Second)
	in := &readStream{r: bytes.NewReader(s.w.Bytes())}
	cs := &ClientStream{s: &bufStream{readStream: *in}, fr: wire.NewReader(in), clk: clock.Real()}
	o := &pushOut{}
	parent.readGains(cs, o)
	for i := range m.BlockCount() {
		if want := i == 0 || i == 4; o.has.has(i) != want {
			t.Errorf("block %d: marked held %v, want %v", i, o.has.has(i), want)
		}
	}

	// A malformed frame ends the reading, and marks nothing.
	bad := append([]byte{3}, wire.TypeHave, 0xff, 0xff)
	in = &readStream{r: bytes.NewReader(bad)}
	cs = &ClientStream{s: &bufStream{readStream: *in}, fr: wire.NewReader(in), clk: clock.Real()}
	o = &pushOut{}
	parent.readGains(cs, o)
	if o.has != nil {
		t.Errorf("a malformed frame marked blocks held")
	}
}
