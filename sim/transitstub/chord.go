package transitstub

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// ID is a Chord identifier: a big-endian number below 2^bits, bits <= 160.
type ID [20]byte

// String returns the identifier in hexadecimal.
func (x ID) String() string { return fmt.Sprintf("%x", x[:]) }

// Cmp compares two identifiers as numbers.
func (x ID) Cmp(y ID) int { return bytes.Compare(x[:], y[:]) }

// mask clears every bit at or above bit position bits.
func (x ID) mask(bits int) ID {
	full := 160 - bits // leading bits to clear
	for i := 0; i < full/8; i++ {
		x[i] = 0
	}
	if r := full % 8; r != 0 {
		x[full/8] &= 0xff >> r
	}
	return x
}

// addPow2 returns x + 2^i mod 2^bits.
func (x ID) addPow2(i, bits int) ID {
	byteIdx := 19 - i/8
	carry := uint16(1) << (i % 8)
	for j := byteIdx; j >= 0 && carry != 0; j-- {
		s := uint16(x[j]) + carry
		x[j] = byte(s)
		carry = s >> 8
	}
	return x.mask(bits)
}

// sub returns x - y mod 2^bits.
func (x ID) sub(y ID, bits int) ID {
	var z ID
	borrow := 0
	for j := 19; j >= 0; j-- {
		d := int(x[j]) - int(y[j]) - borrow
		borrow = 0
		if d < 0 {
			d += 256
			borrow = 1
		}
		z[j] = byte(d)
	}
	return z.mask(bits)
}

// inHalfOpen reports whether x lies in the ring interval (a, b]; (a, a] is the whole ring.
func inHalfOpen(x, a, b ID) bool {
	switch c := a.Cmp(b); {
	case c < 0:
		return a.Cmp(x) < 0 && x.Cmp(b) <= 0
	case c > 0:
		return a.Cmp(x) < 0 || x.Cmp(b) <= 0
	}
	return true
}

// ChordConfig configures a Chord overlay.
type ChordConfig struct {
	// Bits is the size of the identifier ring, 2^Bits; 0 means 160 (SHA-1).
	Bits int
	// Successors is the length of each peer's successor list; 0 means 8.
	Successors int
	// LookupBytes is the size of a lookup message or reply; 0 means 64.
	LookupBytes int
	// RouteViaSuccessors lets lookups also forward to successor-list entries.
	// Chord's find_successor routes by fingers alone (successor lists serve fault
	// tolerance), which gives its mean path length of about ½·log2 N; this option
	// shortens paths.
	RouteViaSuccessors bool
}

func (c ChordConfig) withDefaults() ChordConfig {
	if c.Bits == 0 {
		c.Bits = 160
	}
	if c.Successors == 0 {
		c.Successors = 8
	}
	if c.LookupBytes == 0 {
		c.LookupBytes = 64
	}
	return c
}

// Overlay is a Chord ring of peers attached to routers of a topology. Peers are
// numbered 0..N-1 in ring order (increasing identifier). An Overlay is immutable
// after construction and safe for concurrent use.
type Overlay struct {
	cfg     ChordConfig
	ids     []ID
	routers []int32
	fingers [][]int32 // distinct finger peers, by increasing ring distance
	succ    [][]int32 // successor lists
	paths   *topology.Paths
}

// NewOverlay places n peers on random routers of paths' topology (distinct routers
// while there are enough), gives each the SHA-1 of its seed and index as identifier
// (reduced to cfg.Bits bits, redrawn on a collision), and builds finger tables and
// successor lists from global knowledge, as a stabilised Chord ring has them.
func NewOverlay(paths *topology.Paths, n int, cfg ChordConfig, seed uint64) (*Overlay, error) {
	cfg = cfg.withDefaults()
	switch {
	case n < 2:
		return nil, fmt.Errorf("%w: a Chord ring needs at least 2 peers, got %d", ErrNoPeers, n)
	case cfg.Bits < 1 || cfg.Bits > 160:
		return nil, fmt.Errorf("%w: ring bits must be in [1,160], got %d", ErrParams, cfg.Bits)
	case cfg.Bits < 63 && uint64(n) > uint64(1)<<cfg.Bits:
		return nil, fmt.Errorf("%w: %d peers do not fit a ring of 2^%d ids", ErrParams, n, cfg.Bits)
	case cfg.Successors < 1 || cfg.LookupBytes < 1:
		return nil, fmt.Errorf("%w: successors and lookup bytes must be positive", ErrParams)
	}
	rng := rand.New(rand.NewPCG(seed, 0x63686f7264)) // "chord"
	nr := paths.Topology().Routers()
	var routers []int32
	if n <= nr {
		perm := rng.Perm(nr)[:n]
		for _, r := range perm {
			routers = append(routers, int32(r))
		}
	} else {
		for range n {
			routers = append(routers, int32(rng.IntN(nr)))
		}
	}
	type peer struct {
		id ID
		r  int32
	}
	peers := make([]peer, n)
	seen := make(map[ID]bool, n)
	var buf [24]byte
	binary.BigEndian.PutUint64(buf[:8], seed)
	for i := range peers {
		for salt := uint64(0); ; salt++ {
			binary.BigEndian.PutUint64(buf[8:16], uint64(i))
			binary.BigEndian.PutUint64(buf[16:], salt)
			id := ID(sha1.Sum(buf[:])).mask(cfg.Bits)
			if !seen[id] {
				seen[id] = true
				peers[i] = peer{id, routers[i]}
				break
			}
		}
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].id.Cmp(peers[j].id) < 0 })
	o := &Overlay{cfg: cfg, paths: paths, ids: make([]ID, n), routers: make([]int32, n)}
	for i, p := range peers {
		o.ids[i], o.routers[i] = p.id, p.r
	}
	o.fingers = make([][]int32, n)
	o.succ = make([][]int32, n)
	ns := min(cfg.Successors, n-1)
	for i := range n {
		for j := 1; j <= ns; j++ {
			o.succ[i] = append(o.succ[i], int32((i+j)%n))
		}
		last := int32(-1)
		for b := 0; b < cfg.Bits; b++ {
			f := int32(o.Successor(o.ids[i].addPow2(b, cfg.Bits)))
			if f != last && f != int32(i) {
				o.fingers[i] = append(o.fingers[i], f)
				last = f
			}
		}
	}
	return o, nil
}

// Len returns the number of peers.
func (o *Overlay) Len() int { return len(o.ids) }

// Config returns the overlay's configuration with defaults filled in.
func (o *Overlay) Config() ChordConfig { return o.cfg }

// Paths returns the underlay path cache.
func (o *Overlay) Paths() *topology.Paths { return o.paths }

// ID returns peer i's identifier.
func (o *Overlay) ID(i int) ID { return o.ids[i] }

// Router returns the router peer i is attached to.
func (o *Overlay) Router(i int) int { return int(o.routers[i]) }

// Fingers returns peer i's distinct finger peers by increasing ring distance (the
// first is its successor). The slice is shared: do not modify it.
func (o *Overlay) Fingers(i int) []int32 { return o.fingers[i] }

// SuccessorList returns peer i's successor list. The slice is shared: do not modify it.
func (o *Overlay) SuccessorList(i int) []int32 { return o.succ[i] }

// Neighbours returns the distinct peers in i's finger table and successor list.
func (o *Overlay) Neighbours(i int) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, l := range [][]int32{o.succ[i], o.fingers[i]} {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Successor returns the peer responsible for key: the first peer whose identifier
// is at or after key on the ring.
func (o *Overlay) Successor(key ID) int {
	i := sort.Search(len(o.ids), func(i int) bool { return o.ids[i].Cmp(key) >= 0 })
	if i == len(o.ids) {
		return 0
	}
	return i
}

// Route returns the underlay route between peers a and b.
func (o *Overlay) Route(a, b int) topology.Route {
	return o.paths.Route(int(o.routers[a]), int(o.routers[b]))
}

// Lookup is the result of routing a key through the overlay.
type Lookup struct {
	// Owner is the peer responsible for the key.
	Owner int
	// Path lists the peers the lookup visited, from the origin to the owner's
	// predecessor, which answers.
	Path []int
	// Hops is the number of forwarding hops (len(Path)-1), Chord's path length.
	Hops int
	// LatencyMS is the time from sending the lookup to receiving the answer: every
	// forwarding hop over its underlay route plus the answer's direct route back.
	LatencyMS float64
}

// Lookup routes key from peer from hop by hop, each peer forwarding to the closest
// peer preceding the key among its fingers (and successors if so configured), until a peer whose
// successor owns the key answers the origin directly. If from owns the key itself,
// no message is sent.
func (o *Overlay) Lookup(from int, key ID) Lookup {
	bits := o.cfg.Bits
	cur := from
	l := Lookup{Path: []int{from}}
	if o.ids[cur] == key {
		l.Owner = cur
		return l
	}
	for {
		s := int(o.succ[cur][0])
		if inHalfOpen(key, o.ids[cur], o.ids[s]) {
			l.Owner = s
			break
		}
		// Closest preceding peer: the candidate in (cur, key) farthest from cur.
		best, bestD := -1, ID{}
		target := key.sub(o.ids[cur], bits)
		lists := [2][]int32{o.fingers[cur]}
		if o.cfg.RouteViaSuccessors {
			lists[1] = o.succ[cur]
		}
		for _, list := range lists {
			for _, p := range list {
				d := o.ids[p].sub(o.ids[cur], bits)
				if d.Cmp(target) < 0 && (best < 0 || d.Cmp(bestD) > 0) {
					best, bestD = int(p), d
				}
			}
		}
		if best < 0 {
			best = s
		}
		l.LatencyMS += o.Route(cur, best).TransferMS(o.cfg.LookupBytes)
		l.Path = append(l.Path, best)
		cur = best
	}
	l.Hops = len(l.Path) - 1
	if cur != from {
		l.LatencyMS += o.Route(cur, from).TransferMS(o.cfg.LookupBytes)
	}
	return l
}

// LookupStats summarises random lookups.
type LookupStats struct {
	Lookups   int     `json:"lookups"`
	MeanHops  float64 `json:"mean_hops"`
	MaxHops   int     `json:"max_hops"`
	MedianMS  float64 `json:"median_ms"`
	P95MS     float64 `json:"p95_ms"`
	MeanMS    float64 `json:"mean_ms"`
	HalfLog2N float64 `json:"half_log2_n"`
}

// MeasureLookups runs count lookups of random keys from random peers (seeded) and
// summarises hop counts and latencies. Every lookup is checked against Successor;
// a wrong owner is reported as an error.
func (o *Overlay) MeasureLookups(count int, seed uint64) (LookupStats, error) {
	if count < 1 {
		return LookupStats{}, fmt.Errorf("%w: lookup count must be positive", ErrParams)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f6f6b)) // "look"
	lat := make([]float64, count)
	st := LookupStats{Lookups: count, HalfLog2N: 0.5 * log2(float64(o.Len()))}
	hops := 0
	for i := range count {
		var key ID
		for j := 0; j < 20; j += 8 {
			var w [8]byte
			binary.BigEndian.PutUint64(w[:], rng.Uint64())
			copy(key[j:], w[:])
		}
		key = key.mask(o.cfg.Bits)
		from := rng.IntN(o.Len())
		l := o.Lookup(from, key)
		if want := o.Successor(key); l.Owner != want {
			return st, fmt.Errorf("transitstub: lookup of %v from peer %d found %d, want %d", key, from, l.Owner, want)
		}
		hops += l.Hops
		st.MaxHops = max(st.MaxHops, l.Hops)
		lat[i] = l.LatencyMS
		st.MeanMS += l.LatencyMS
	}
	st.MeanHops = float64(hops) / float64(count)
	st.MeanMS /= float64(count)
	st.MedianMS = quantile(lat, 0.5)
	st.P95MS = quantile(lat, 0.95)
	return st, nil
}
