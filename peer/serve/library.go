package serve

import (
	"fmt"
	"sync"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Library holds the contents a service serves or fetches, by root. It
// holds its own lock; once closed it takes no more.
type Library struct {
	mu       sync.Mutex
	contents map[chunker.ID]*Content
	closed   bool
}

// NewLibrary returns an empty library.
func NewLibrary() *Library {
	return &Library{contents: make(map[chunker.ID]*Content)}
}

// Get returns the content of root, nil if there is none.
func (l *Library) Get(root chunker.ID) *Content {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.contents[root]
}

// Lookup is get for a root as sent on the wire: nil unless it is a root's
// length.
func (l *Library) Lookup(root []byte) *Content {
	var id chunker.ID
	if len(root) != len(id) {
		return nil
	}
	copy(id[:], root)
	return l.Get(id)
}

// Add adds c, unless its root is there already (but as a view, which c
// replaces) or the library is closed.
func (l *Library) Add(c *Content) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return wire.ErrClosed
	}
	c.fresh = uploadQueueFresh
	id := c.Man.ID()
	if old, dup := l.contents[id]; dup && !old.Store.IsView() {
		return fmt.Errorf("peer: content %s is already served by this peer", id)
	} else if dup {
		old.Close() // a view gives way to the content itself
	}
	l.contents[id] = c
	return nil
}

// Remove takes the content of root out and returns it (nil if none). The
// views (ServeOffer) go too, closed, unless c is one: they may read from c's
// store, which the caller closes.
func (l *Library) Remove(root chunker.ID) *Content {
	l.mu.Lock()
	c := l.contents[root]
	delete(l.contents, root)
	var views []*Content
	if c != nil && !c.Store.IsView() {
		for id, v := range l.contents {
			if v.Store.IsView() {
				views = append(views, v)
				delete(l.contents, id)
			}
		}
	}
	l.mu.Unlock()
	for _, v := range views {
		v.Close()
	}
	return c
}

// All returns the contents held now.
func (l *Library) All() []*Content {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Content, 0, len(l.contents))
	for _, c := range l.contents {
		out = append(out, c)
	}
	return out
}

// Stop makes add refuse new contents from now on (the service is
// closing); those held stay until drain.
func (l *Library) Stop() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// Drain returns the contents held and empties the library.
func (l *Library) Drain() []*Content {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Content, 0, len(l.contents))
	for id, c := range l.contents {
		out = append(out, c)
		delete(l.contents, id)
	}
	return out
}

// Announceable are the roots the DHT of a peer New built announces: those
// it serves and holds a block of (a fetch that holds none yet has nothing
// to offer), views aside.
func (l *Library) Announceable() []chunker.ID {
	var out []chunker.ID
	for _, c := range l.All() {
		if c.Store.HeldCount() > 0 && !c.Store.IsView() {
			out = append(out, c.Man.ID())
		}
	}
	return out
}
