package swarm

import (
	"io"
	"slices"
	"sync"

	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// A watch (wire.Hello.Watch) is a reconciliation stream kept open once its
// session is answered: the server sends a have frame of every block it
// gains, the fetcher one of every block it stores, until the fetcher closes
// it. One reconciliation (CBF subtraction, which finds every block the
// fetcher lacks) starts it; from then on each side learns of the other's new
// blocks a one-way delay after they are stored, at a few bytes a block, as
// BitTorrent's HAVE messages tell them, rather than by reconciling again. A
// super-seed deals its offers out over its watches (superSeed).

// watchConn is the fetcher's side of a watch of one source: a goroutine
// reads the source's have frames into its offers, another sends the
// fetch's new blocks.
type watchConn struct {
	cs *ClientStream
	// news has a value when haves of the source were added to its offers.
	news chan struct{}
	// done is closed when the watch has ended (either side).
	done chan struct{}

	mu      sync.Mutex
	pending []int         // blocks stored and not yet sent
	signal  chan struct{} // has a value when pending has blocks
	err     error
	once    sync.Once
}

// startWatch keeps cs, the stream of an answered reconciliation asked for
// with Hello.Watch, as src's watch.
func (wk worker) startWatch(cs *ClientStream) *watchConn {
	w := &watchConn{cs: cs, news: make(chan struct{}, 1), done: make(chan struct{}), signal: make(chan struct{}, 1)}
	go w.send()
	go wk.readHaves(w)
	return w
}

// readHaves adds the blocks the source's have frames list to its offers
// until the watch ends.
func (wk worker) readHaves(w *watchConn) {
	f, src := wk.fetch, wk.src
	limit := f.t.Count()
	var idx []int
	for {
		fr, err := w.cs.nextQuiet(serve.HaveFrameMax)
		if err == nil {
			idx, err = wire.DecodeHave(idx, fr, serve.MaxHave, limit)
		}
		if err != nil {
			w.end(err)
			return
		}
		f.mu.Lock()
		idx = slices.DeleteFunc(idx, func(i int) bool {
			_, refused := src.refused[i]
			return refused || f.t.Has(i)
		})
		f.pick.Add(&src.offers, idx)
		wk.seeFromLocked(idx)
		src.share.Haves += len(idx)
		f.mu.Unlock()
		select {
		case w.news <- struct{}{}:
		default:
		}
	}
}

// have queues block i to be told to the source.
func (w *watchConn) have(i int) {
	w.mu.Lock()
	w.pending = append(w.pending, i)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// send writes the queued blocks as have frames until the watch ends.
func (w *watchConn) send() {
	for {
		select {
		case <-w.signal:
		case <-w.done:
			return
		}
		w.mu.Lock()
		idx := w.pending
		w.pending = nil
		w.mu.Unlock()
		for len(idx) > 0 {
			n := min(len(idx), serve.MaxHave)
			err := w.cs.Send(wire.AppendHave(nil, idx[:n]))
			if err == nil {
				err = w.cs.Flush()
			}
			if err != nil {
				w.end(err)
				return
			}
			idx = idx[n:]
		}
	}
}

// end ends the watch with err (the first reason kept) and resets its
// stream.
func (w *watchConn) end(err error) {
	w.once.Do(func() {
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		close(w.done)
		w.cs.Reset()
	})
}

// close ends the watch politely: the source sees the stream end.
func (w *watchConn) close() {
	w.once.Do(func() {
		w.mu.Lock()
		w.err = io.EOF
		w.mu.Unlock()
		close(w.done)
		w.cs.Close()
	})
}

// alive reports whether the watch has not ended.
func (w *watchConn) alive() bool {
	if w == nil {
		return false
	}
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// announce tells the sources this fetch watches that it stored block i.
func (f *fetch) announce(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, src := range f.sources {
		if src.watch.alive() {
			src.watch.have(i)
		}
	}
}
