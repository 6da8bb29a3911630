package peer

import (
	"fmt"
	"sync"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// library holds the contents a service serves or fetches, by root. It
// holds its own lock; once closed it takes no more.
type library struct {
	mu       sync.Mutex
	contents map[chunker.ID]*content
	closed   bool
}

func newLibrary() *library {
	return &library{contents: make(map[chunker.ID]*content)}
}

// get returns the content of root, nil if there is none.
func (l *library) get(root chunker.ID) *content {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.contents[root]
}

// lookup is get for a root as sent on the wire: nil unless it is a root's
// length.
func (l *library) lookup(root []byte) *content {
	var id chunker.ID
	if len(root) != len(id) {
		return nil
	}
	copy(id[:], root)
	return l.get(id)
}

// add adds c, unless its root is there already or the library is closed.
func (l *library) add(c *content) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	c.fresh = uploadQueueFresh
	id := c.man.ID()
	if _, dup := l.contents[id]; dup {
		return fmt.Errorf("peer: content %s is already served by this peer", id)
	}
	l.contents[id] = c
	return nil
}

// remove takes the content of root out and returns it (nil if none).
func (l *library) remove(root chunker.ID) *content {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.contents[root]
	delete(l.contents, root)
	return c
}

// all returns the contents held now.
func (l *library) all() []*content {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*content, 0, len(l.contents))
	for _, c := range l.contents {
		out = append(out, c)
	}
	return out
}

// stop makes add refuse new contents from now on (the service is
// closing); those held stay until drain.
func (l *library) stop() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// drain returns the contents held and empties the library.
func (l *library) drain() []*content {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*content, 0, len(l.contents))
	for id, c := range l.contents {
		out = append(out, c)
		delete(l.contents, id)
	}
	return out
}

// announceable are the roots the DHT of a peer New built announces: those
// it serves and holds a block of (a fetch that holds none yet has nothing
// to offer).
func (l *library) announceable() []chunker.ID {
	var out []chunker.ID
	for _, c := range l.all() {
		if c.store.HeldCount() > 0 {
			out = append(out, c.man.ID())
		}
	}
	return out
}
