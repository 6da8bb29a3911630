package testnet

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
)

// sendBuffered gives a stream of the mock network a send buffer. A mock
// stream has none: a write waits until the other side reads it. So a
// fetcher that writes its next want while the peer is still writing a
// block to it (and reads neither until its write is through) waits for
// ever on a peer that waits for it in turn; over TCP, socket and muxer
// buffers take the want, and the mock network's streams ignore the
// deadlines that would end the wait. Writes are queued and written in order
// by one goroutine; a failed write fails the later ones, Close closes the
// stream once the queue is written, and Reset drops the queue at once.
type sendBuffered struct {
	network.Stream
	mu      sync.Mutex
	queue   [][]byte
	err     error
	closing bool
	running bool
}

func newSendBuffered(s network.Stream) *sendBuffered {
	return &sendBuffered{Stream: s}
}

// Write queues a copy of p.
func (b *sendBuffered) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if b.closing {
		return 0, network.ErrReset
	}
	b.queue = append(b.queue, append([]byte(nil), p...))
	if !b.running {
		b.running = true
		go b.drain()
	}
	return len(p), nil
}

// drain writes the queue until it is empty, then ends (closing the stream
// if Close was called).
func (b *sendBuffered) drain() {
	b.mu.Lock()
	for {
		if len(b.queue) == 0 || b.err != nil {
			b.running = false
			closing := b.closing && b.err == nil
			b.queue = nil
			b.mu.Unlock()
			if closing {
				b.Stream.Close()
			}
			return
		}
		p := b.queue[0]
		b.queue = b.queue[1:]
		b.mu.Unlock()
		_, err := b.Stream.Write(p)
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
		}
	}
}

// Close closes the stream once the queued writes are written.
func (b *sendBuffered) Close() error {
	b.mu.Lock()
	b.closing = true
	if b.running {
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	return b.Stream.Close()
}

// Reset drops the queue and resets the stream.
func (b *sendBuffered) Reset() error {
	b.mu.Lock()
	b.queue = nil
	if b.err == nil {
		b.err = network.ErrReset
	}
	b.mu.Unlock()
	return b.Stream.Reset()
}
