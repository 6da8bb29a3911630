package testnet

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/testnet/tracestats"
)

// role is what one node does in a run beside fetching or seeding.
type role struct {
	// liar is set for a liar, lie says how it lies.
	liar bool
	lie  LiarKind
	// leaveAt, when positive, is the share of the blocks the node holds when
	// it leaves; rejoin says it comes back, after a pause of pause times the
	// time it had run.
	leaveAt float64
	rejoin  bool
	pause   float64
	// lateAt, when positive, is the share of the swarm's progress at which
	// the node joins.
	lateAt float64
}

// stable says whether the node is honest and present from start to end.
func (r role) stable() bool { return !r.liar && r.leaveAt == 0 && r.lateAt == 0 }

// needed says whether the node must end with the file: an honest node that
// does not leave for good.
func (r role) needed() bool { return !r.liar && (r.leaveAt == 0 || r.rejoin) }

// planRoles draws the liars and the churning nodes among the nodes other
// than seedNode, from their own random stream (so that the rest of a run is
// the same with or without them). At least one honest node besides the seed
// stays from start to end.
func planRoles(cfg Config, seedNode int, rng *rand.Rand) []role {
	roles := make([]role, cfg.Nodes)
	var cand []int
	for _, i := range rng.Perm(cfg.Nodes) {
		if i != seedNode {
			cand = append(cand, i)
		}
	}
	fetchers := len(cand)
	count := func(share float64, limit int) int {
		return max(0, min(limit, int(math.Round(share*float64(fetchers)))))
	}
	nl := count(cfg.Liars, fetchers-1)
	for k, i := range cand[:nl] {
		roles[i].liar, roles[i].lie = true, cfg.LiarKind
		if cfg.LiarKind == LiarMixed {
			roles[i].lie = []LiarKind{LiarCorrupt, LiarPhantom}[k%2]
		}
	}
	honest := cand[nl:]
	nLeave := count(cfg.Churn.Leave, len(honest)-1)
	nRejoin := count(cfg.Churn.Rejoin, nLeave)
	nLate := count(cfg.Churn.Late, len(honest)-1-nLeave)
	for k, i := range honest[:nLeave] {
		roles[i].leaveAt = 0.2 + 0.6*rng.Float64()
		roles[i].rejoin = k < nRejoin
		roles[i].pause = 0.5 + 0.5*rng.Float64()
	}
	for _, i := range honest[nLeave : nLeave+nLate] {
		roles[i].lateAt = 0.1 + 0.4*rng.Float64()
	}
	return roles
}

// liarStream is a liar's side of a blocks stream it serves: it reads the
// frames package peer writes (package peer/wire) and lies in the block
// frames: a LiarCorrupt flips bytes of the block's payload, a LiarPhantom
// answers "missing" instead. Other frames pass unchanged. A frame split over
// writes is held until it is whole.
type liarStream struct {
	network.Stream
	lie     LiarKind
	c       *counters
	mu      sync.Mutex
	pending []byte
}

func (s *liarStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, b...)
	var out []byte
	for {
		n, k := binary.Uvarint(s.pending)
		if k <= 0 || uint64(len(s.pending)-k) < n {
			break // not whole yet
		}
		f := s.pending[k : k+int(n)]
		out = s.lieIn(out, f)
		s.pending = s.pending[k+int(n):]
	}
	if len(s.pending) == 0 {
		s.pending = nil // do not hold a block's buffer between frames
	} else {
		s.pending = append([]byte(nil), s.pending...)
	}
	if len(out) > 0 {
		if _, err := s.Stream.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// lieIn appends frame f to out as the liar sends it.
func (s *liarStream) lieIn(out, f []byte) []byte {
	idx, k := uint64(0), 0
	if len(f) > 1 && f[0] == wire.TypeBlock {
		idx, k = binary.Uvarint(f[1:])
	}
	switch {
	case k <= 0:
		return appendFrame(out, f)
	case s.lie == LiarPhantom:
		s.c.liedMissing.Add(1)
		return appendFrame(out, wire.AppendMissing(nil, int(idx)))
	}
	payload := len(f) - 1 - k
	if payload <= 0 {
		return appendFrame(out, f)
	}
	s.c.liedCorrupt.Add(1)
	out = binary.AppendUvarint(out, uint64(len(f)))
	start := len(out)
	out = append(out, f...)
	// Flip a byte at the start, the middle and the end of the payload.
	for _, at := range []int{1 + k, 1 + k + payload/2, len(f) - 1} {
		out[start+at] ^= 0xff
	}
	return out
}

func appendFrame(out, f []byte) []byte {
	return append(binary.AppendUvarint(out, uint64(len(f))), f...)
}

// traceRoles writes each node's part in the run (churn and liars) to the
// trace: "role N liar KIND | leave AT REJOIN | late AT" lines.
func traceRoles(tr *tracestats.Writer, roles []role) {
	for i, r := range roles {
		switch {
		case r.liar:
			tr.Line("role %d liar %s", i, r.lie)
		case r.leaveAt > 0:
			tr.Line("role %d leave %.3f %t", i, r.leaveAt, r.rejoin)
		case r.lateAt > 0:
			tr.Line("role %d late %.3f", i, r.lateAt)
		}
	}
}
