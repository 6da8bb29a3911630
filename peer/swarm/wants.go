package swarm

import (
	"context"
	"sync"
)

// wantWriter sends the wants of a blocks stream from a goroutine of its own,
// so that the fetch reads blocks while a want waits to go out. Written
// inline, a want could wait for the source to read it while the source waits
// for the fetch to read its blocks: on transports with little buffering
// (go-libp2p's mock network has none, and ignores write deadlines) both ends
// would wait for ever.
type wantWriter struct {
	cs   *ClientStream
	ch   chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// startWantWriter starts the writer of cs; at most depth wants wait at once
// (a fetch has fewer than its window pending: a block that arrives was
// asked for in a want the source has read).
func startWantWriter(cs *ClientStream, depth int) *wantWriter {
	w := &wantWriter{cs: cs, ch: make(chan []byte, max(depth, 1)), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *wantWriter) run() {
	defer close(w.done)
	for msg := range w.ch {
		if w.failed() != nil {
			continue
		}
		err := w.cs.Send(msg)
		if err == nil {
			err = w.cs.Flush()
		}
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			// The reader fails at once rather than at its stall timeout.
			w.cs.s.Reset()
		}
	}
}

// send queues a want message (the writer owns it from then on).
func (w *wantWriter) send(ctx context.Context, msg []byte) error {
	if err := w.failed(); err != nil {
		return err
	}
	select {
	case w.ch <- msg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failed returns the error of a failed send, if any.
func (w *wantWriter) failed() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stop ends the writer once the queued wants are written (or have failed)
// and waits for it.
func (w *wantWriter) stop() {
	if w == nil {
		return
	}
	close(w.ch)
	<-w.done
}
