package testnet

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/reconcile-p2p/reconcile/chunker"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// ProtoPush is the protocol of the testnet's stripe-tree pushes
// (Config.Trees): a parent writes blocks to a child, each as its index and
// length (4 bytes each, big-endian) and its bytes. It is an experiment of
// the testnet, not one of package peer's protocols: a child takes blocks
// only from the parents its trees give it, and checks each against the
// manifest, but there is no repair of what a lost parent never sends.
const ProtoPush = protocol.ID("/reconcile-testnet/push/1.0.0")

// pushFrame is the length of a push frame's header.
const pushFrame = 8

// treePush runs the pushes of one run: the seed sends every block once to
// its stripe's root, and every fetcher passes each block it stores on to
// its children in that block's stripe.
type treePush struct {
	trees *ts.StripeTrees
	man   *chunker.Manifest
	seed  int
	hosts []*countingHost
	ids   []lpeer.ID
	// parents marks, per node, the peers it takes pushes from.
	parents []map[lpeer.ID]bool
	stores  []*chunker.Store
	// done is closed, per fetcher, once its store is complete; errs holds
	// why a fetcher's pushes failed (the first error).
	done    []chan struct{}
	once    []sync.Once
	errMu   sync.Mutex
	errs    []error
	onBlock func(i int)

	ctx context.Context
	// seedWrites counts the blocks the seed has written; seedOutAt is when
	// it had written them all (Unix ns).
	seedWrites, seedOutAt atomic.Int64
	// outs are the open pushes, per sender and child.
	outMu sync.Mutex
	outs  map[[2]int]*pushOut
	wg    sync.WaitGroup
}

// pushOut is one sender's stream of pushes to one child, fed in order.
type pushOut struct {
	mu   sync.Mutex
	q    [][]byte // frames to write
	wake chan struct{}
}

// newTreePush sets the pushes of a run up, to last until ctx is done:
// every fetcher (stores[i] non-nil) listens for its parents' pushes.
func newTreePush(ctx context.Context, trees *ts.StripeTrees, man *chunker.Manifest, seed int, hosts []*countingHost, stores []*chunker.Store, onBlock func(i int)) *treePush {
	n := len(hosts)
	tp := &treePush{ctx: ctx, trees: trees, man: man, seed: seed, hosts: hosts, ids: make([]lpeer.ID, n),
		parents: make([]map[lpeer.ID]bool, n), stores: stores, done: make([]chan struct{}, n), once: make([]sync.Once, n), errs: make([]error, n),
		onBlock: onBlock, outs: map[[2]int]*pushOut{}}
	for i, h := range hosts {
		tp.ids[i] = h.ID()
		tp.parents[i] = map[lpeer.ID]bool{}
		tp.done[i] = make(chan struct{})
	}
	for s, root := range trees.Roots {
		tp.parents[root][tp.ids[seed]] = true
		for p, kids := range trees.Kids[s] {
			for _, c := range kids {
				tp.parents[c][tp.ids[p]] = true
			}
		}
	}
	for i, st := range stores {
		if st == nil {
			continue
		}
		hosts[i].SetStreamHandler(ProtoPush, func(s network.Stream) { tp.receive(i, s) })
	}
	return tp
}

// start sends every block of the file, read from data (copied: the caller
// may drop it), from the seed to its stripe's root, in order.
func (tp *treePush) start(data []byte) {
	for b := range tp.man.BlockCount() {
		tp.push(tp.seed, tp.trees.Root(b), b, blockOf(data, tp.man, b))
	}
}

// fail records why node i's pushes failed.
func (tp *treePush) fail(i int, err error) {
	tp.errMu.Lock()
	defer tp.errMu.Unlock()
	if tp.errs[i] == nil {
		tp.errs[i] = err
	}
}

// err returns why node i's pushes failed, if they did.
func (tp *treePush) err(i int) error {
	tp.errMu.Lock()
	defer tp.errMu.Unlock()
	return tp.errs[i]
}

// receive stores the blocks a parent pushes to node i and passes each on.
func (tp *treePush) receive(i int, s network.Stream) {
	defer s.Close()
	if !tp.parents[i][s.Conn().RemotePeer()] {
		_ = s.Reset() // not a parent of this node's
		return
	}
	r := bufio.NewReaderSize(s, 64<<10)
	st := tp.stores[i]
	for {
		b, data, err := readPush(r, tp.man)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if tp.ctx.Err() == nil && !st.Complete() {
				tp.fail(i, fmt.Errorf("testnet: push from %s: %w", s.Conn().RemotePeer(), err))
			}
			_ = s.Reset()
			return
		}
		held := st.Has(b)
		if err := st.PutBlock(b, data); err != nil {
			tp.fail(i, fmt.Errorf("testnet: push of block %d: %w", b, err))
			_ = s.Reset()
			return
		}
		if held {
			continue
		}
		tp.onBlock(i)
		for _, c := range tp.trees.Children(b, i) {
			tp.push(i, int(c), b, data)
		}
		if st.Complete() {
			tp.once[i].Do(func() { close(tp.done[i]) })
		}
	}
}

// errPush is a push frame that is not a block of the file.
var errPush = errors.New("not a block of the file")

// readPush reads one push frame from r: the block's index and its bytes.
// It returns io.EOF at a clean end between frames, errPush for a frame
// whose index or length is not a block of m's (before reading or
// allocating its bytes), and io.ErrUnexpectedEOF for a frame cut short.
// The bytes are not checked against the block's hash (the store does).
func readPush(r io.Reader, m *chunker.Manifest) (int, []byte, error) {
	var hdr [pushFrame]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	b, n := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
	if int64(b) >= int64(m.BlockCount()) || int64(n) != int64(m.BlockLen(int(b))) {
		return 0, nil, fmt.Errorf("testnet: push of block %d, %d bytes: %w", b, n, errPush)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, fmt.Errorf("testnet: push of block %d: %w", b, err)
	}
	return int(b), data, nil
}

// push queues block b, data, on the stream from a to c, opening it (and
// its writer) on first use.
func (tp *treePush) push(a, c, b int, data []byte) {
	tp.outMu.Lock()
	o := tp.outs[[2]int{a, c}]
	if o == nil {
		o = &pushOut{wake: make(chan struct{}, 1)}
		tp.outs[[2]int{a, c}] = o
		tp.wg.Add(1)
		go tp.write(a, c, o)
	}
	tp.outMu.Unlock()
	frame := make([]byte, pushFrame, pushFrame+len(data))
	binary.BigEndian.PutUint32(frame[:4], uint32(b))
	binary.BigEndian.PutUint32(frame[4:], uint32(len(data)))
	o.mu.Lock()
	o.q = append(o.q, append(frame, data...))
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// write sends a's pushes to c, in the order queued, until the run ends.
func (tp *treePush) write(a, c int, o *pushOut) {
	defer tp.wg.Done()
	s, err := tp.hosts[a].NewStream(tp.ctx, tp.ids[c], ProtoPush)
	if err != nil {
		if tp.ctx.Err() == nil {
			tp.fail(c, fmt.Errorf("testnet: push stream from node %d: %w", a, err))
		}
		return
	}
	defer s.Close()
	for {
		o.mu.Lock()
		q := o.q
		o.q = nil
		o.mu.Unlock()
		for _, f := range q {
			_, err := s.Write(f)
			if err == nil && a == tp.seed {
				tp.seedSent()
			}
			if err != nil {
				if tp.ctx.Err() == nil {
					tp.fail(c, fmt.Errorf("testnet: push to node %d: %w", c, err))
				}
				_ = s.Reset()
				return
			}
		}
		select {
		case <-o.wake:
		case <-tp.ctx.Done():
			return
		}
	}
}

// seedSent counts a block the seed has written (each once: the seed sends
// every block to one root) and notes when the last one was.
func (tp *treePush) seedSent() {
	if tp.seedWrites.Add(1) == int64(tp.man.BlockCount()) {
		tp.seedOutAt.Store(time.Now().UnixNano())
	}
}

// seedOut returns when the seed had written every block (zero: not yet).
func (tp *treePush) seedOut() time.Time {
	if ns := tp.seedOutAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// wait waits until node i's store is complete or the run ends, and returns
// why it did not complete.
func (tp *treePush) wait(i int) error {
	select {
	case <-tp.done[i]:
		return nil
	case <-tp.ctx.Done():
		if err := tp.err(i); err != nil {
			return err
		}
		return fmt.Errorf("testnet: pushes incomplete: %w", tp.ctx.Err())
	}
}

// close waits for the writers, once the run's context is done.
func (tp *treePush) close() { tp.wg.Wait() }

// buildTrees deals the fetchers of a one-seed run into cfg.Trees stripe
// trees, each fetcher placed under the parent it would hear from first
// (the pairs' transit-stub latencies, a block's time on the seed's uplink
// per child ahead of it), and adds their parent-child pairs to ov's, so
// that they are linked and shaped as the overlay's are.
func buildTrees(cfg Config, net *ts.Network, ov *overlay, seed int, up []float64, blockSize int, rng *rand.Rand) *ts.StripeTrees {
	var order []int
	for _, a := range rng.Perm(cfg.Nodes) {
		if a != seed {
			order = append(order, a)
		}
	}
	latency := func(a, b int) time.Duration {
		if cfg.Latency != LatencyTransitStub {
			return 0
		}
		return time.Duration(net.Overlay.Route(a, b).DelayMS) * time.Millisecond
	}
	blockMS := 0.0
	if seed >= 0 && up[seed] > 0 {
		blockMS = 1000 * float64(blockSize) / up[seed]
	}
	var caps []float64
	if len(cfg.Classes) > 0 {
		caps = up
	}
	trees := ts.NewStripeTrees(cfg.Nodes, cfg.Trees, order, caps, seed,
		func(a, b int) float64 { return float64(latency(a, b)) / float64(time.Millisecond) }, blockMS)
	have := map[[2]int]bool{}
	for _, p := range ov.pairs {
		have[[2]int{p.a, p.b}] = true
	}
	add := func(a, b int) {
		k := [2]int{min(a, b), max(a, b)}
		if !have[k] {
			have[k] = true
			ov.pairs = append(ov.pairs, pair{a: k[0], b: k[1], latency: latency(k[0], k[1])})
		}
	}
	for s, root := range trees.Roots {
		add(seed, root)
		for p, kids := range trees.Kids[s] {
			for _, c := range kids {
				add(p, int(c))
			}
		}
	}
	slices.SortFunc(ov.pairs, func(x, y pair) int { return cmp.Or(x.a-y.a, x.b-y.b) })
	return trees
}
