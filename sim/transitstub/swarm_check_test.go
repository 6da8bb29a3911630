package transitstub

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// modelExchange is the swarm's reconciliation model for A pulling from B, as
// RunSwarm runs it: the blocks B sends, from A's kept filter (a CBF for
// complete and ccbf, a Bloom filter for byers) or A's set (bitfield).
func modelExchange(pr *protoRunner, m reconcile.Method, a, b *reconcile.Set) ([]uint32, error) {
	var out []uint32
	switch m {
	case reconcile.Byers:
		bf, err := cbfalgebra.NewBloom(pr.f.M, pr.f.K, cbfalgebra.WithHash(pr.f.Hash))
		if err != nil {
			return nil, err
		}
		for _, i := range a.Indices() {
			bf.AddLocations(pr.at(i))
		}
		for _, i := range b.Indices() {
			if !bf.ContainsLocations(pr.at(i)) {
				out = append(out, uint32(i))
			}
		}
	case reconcile.Bitfield:
		for _, i := range b.Indices() {
			if !a.Has(i) {
				out = append(out, uint32(i))
			}
		}
	default:
		ca, _ := cbfalgebra.NewFromParams(pr.p)
		for _, i := range a.Indices() {
			ca.InsertLocations(pr.at(i))
		}
		cb, _ := cbfalgebra.NewFromParams(pr.p)
		for _, i := range b.Indices() {
			cb.InsertLocations(pr.at(i))
		}
		if err := cbfalgebra.SubtractInto(pr.diff, cb, ca, pr.cu); err != nil {
			return nil, err
		}
		for _, i := range b.Indices() {
			if pr.diff.ContainsLocations(pr.at(i)) {
				out = append(out, uint32(i))
			}
		}
	}
	return out, nil
}

// capture is a reconcile.Sender that keeps the messages sent, for delivery.
type capture struct {
	msgs []reconcile.Message
	wire [][]byte
}

func (c *capture) Send(m *reconcile.Message, encoded []byte) error {
	c.msgs = append(c.msgs, *m)
	c.wire = append(c.wire, slices.Clone(encoded))
	return nil
}

func (c *capture) Flush() error { return nil }

// sessionExchange runs the same exchange with two real reconcile.Sessions (one
// way, A pulls, blocks with payloads) and returns the indices B sent and both
// outcomes.
func sessionExchange(f FilterConfig, m reconcile.Method, uv *reconcile.Universe, a, b *reconcile.Set) ([]uint32, reconcile.Outcome, reconcile.Outcome, error) {
	cfg := reconcile.Config{Method: m, M: f.M, K: f.K, R: f.R, Hash: f.Hash, OneWay: true}
	zero := make([]byte, f.BlockBytes)
	store := func(s *reconcile.Set) *reconcile.MemBlocks {
		st := reconcile.NewMemBlocks(s.Universe(), f.BlockBytes)
		for _, i := range s.Indices() {
			st.Put(i, zero)
		}
		return st
	}
	A, err := reconcile.NewSession(1, cfg, uv, a, store(a))
	if err != nil {
		return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
	}
	B, err := reconcile.NewSession(1, cfg, uv, b, store(b))
	if err != nil {
		return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
	}
	var toB, toA capture
	da, db := reconcile.NewDriver(A, &toB, reconcile.Limits{}), reconcile.NewDriver(B, &toA, reconcile.Limits{})
	if err := A.Start(); err != nil {
		return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
	}
	if err := da.Flush(); err != nil {
		return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
	}
	for _, w := range toB.wire {
		if err := db.Receive(w); err != nil {
			return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
		}
	}
	var sent []uint32
	for i, w := range toA.wire {
		sent = append(sent, toA.msgs[i].Indices...)
		if err := da.Receive(w); err != nil {
			return nil, reconcile.Outcome{}, reconcile.Outcome{}, err
		}
	}
	if !A.Done() || !B.Done() {
		return nil, reconcile.Outcome{}, reconcile.Outcome{}, fmt.Errorf("sessions not done after one exchange")
	}
	return sent, A.Outcome(), B.Outcome(), nil
}

// TestSwarmModelMatchesSessions: for a few pairs of sets, the swarm model's
// answer (which blocks B sends A, and the sizes of the filter and blocks
// messages) is the answer of real sessions.
func TestSwarmModelMatchesSessions(t *testing.T) {
	f := PaperFilter()
	f.M, f.NN = 8192, 1200
	rng := rand.New(rand.NewPCG(21, 22))
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Byers, reconcile.Bitfield, reconcile.CCBF} {
		u := 800
		if m == reconcile.Byers {
			u = f.NN
		}
		pr, err := newProtoRunner(f, u, m)
		if err != nil {
			t.Fatal(err)
		}
		uv, _ := reconcile.NewUniverse(u)
		for _, sz := range [][3]int{{160, 160, 20}, {400, 600, 250}, {700, 100, 50}, {50, 790, 45}} {
			t.Run(fmt.Sprint(m, sz), func(t *testing.T) {
				a, b, err := reconcile.RandomSplit(rng, u, sz[2], sz[0], sz[1])
				if err != nil {
					t.Fatal(err)
				}
				want, err := modelExchange(pr, m, a, b)
				if err != nil {
					t.Fatal(err)
				}
				got, oa, ob, err := sessionExchange(f, m, uv, a, b)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("sessions sent %d blocks, the model %d", len(got), len(want))
				}
				if fb := modelFilterBytes(pr, m, a); fb != oa.WireSent[reconcile.MsgFilter] {
					t.Errorf("filter message: model %d bytes, session %d", fb, oa.WireSent[reconcile.MsgFilter])
				}
				if bb := pr.blocksBytes(want); bb != ob.WireSent[reconcile.MsgBlocks] {
					t.Errorf("blocks message: model %d bytes, session %d", bb, ob.WireSent[reconcile.MsgBlocks])
				}
			})
		}
	}
}

// modelFilterBytes is the size RunSwarm gives A's filter message.
func modelFilterBytes(pr *protoRunner, m reconcile.Method, a *reconcile.Set) int {
	f, u := pr.f, pr.u
	switch m {
	case reconcile.Byers:
		bf, _ := cbfalgebra.NewBloom(f.M, f.K, cbfalgebra.WithHash(f.Hash))
		return filterBytes(m, bf.Params(), u, a.Len(), make([]byte, bf.EncodedSize()))
	case reconcile.Bitfield:
		return filterBytes(m, cbfalgebra.Params{}, u, a.Len(), make([]byte, (u+7)/8))
	}
	c, _ := cbfalgebra.NewFromParams(pr.p)
	for _, i := range a.Indices() {
		c.InsertLocations(pr.at(i))
	}
	if m == reconcile.CCBF {
		raw, _ := c.MarshalBinary()
		return filterBytes(m, pr.p, u, a.Len(), reconcile.CompressFilter(nil, raw))
	}
	return filterBytes(m, pr.p, u, a.Len(), make([]byte, c.EncodedSize()))
}

// BenchmarkSwarmExchange prices one swarm exchange (A pulls from B; the
// paper's filter, 5000 blocks, each side holding half, sharing a quarter) as
// the model runs it (A's and B's filters kept between exchanges: one
// subtraction and B's queries) and as two real sessions run it (A builds and
// encodes its filter, B decodes it and answers, both through the codec).
func BenchmarkSwarmExchange(b *testing.B) {
	f := PaperFilter()
	const u = 5000
	rng := rand.New(rand.NewPCG(23, 24))
	sa, sb, err := reconcile.RandomSplit(rng, u, 1250, 2500, 2500)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Byers} {
		pr, err := newProtoRunner(f, u, m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m.String()+"/model", func(b *testing.B) {
			ca, _ := cbfalgebra.NewFromParams(pr.p)
			cb, _ := cbfalgebra.NewFromParams(pr.p)
			bf, _ := cbfalgebra.NewBloom(f.M, f.K, cbfalgebra.WithHash(f.Hash))
			for _, i := range sa.Indices() {
				ca.InsertLocations(pr.at(i))
				bf.AddLocations(pr.at(i))
			}
			for _, i := range sb.Indices() {
				cb.InsertLocations(pr.at(i))
			}
			var idx []int
			for b.Loop() {
				idx = sb.AppendIndices(idx[:0])
				pr.idx = pr.idx[:0]
				if m == reconcile.Byers {
					for _, i := range idx {
						if !bf.ContainsLocations(pr.at(i)) {
							pr.idx = append(pr.idx, uint32(i))
						}
					}
				} else {
					cbfalgebra.SubtractInto(pr.diff, cb, ca, pr.cu)
					for _, i := range idx {
						if pr.diff.ContainsLocations(pr.at(i)) {
							pr.idx = append(pr.idx, uint32(i))
						}
					}
				}
				_ = pr.blocksBytes(pr.idx)
			}
		})
		b.Run(m.String()+"/sessions", func(b *testing.B) {
			uv, _ := reconcile.NewUniverse(u)
			for b.Loop() {
				if _, _, _, err := sessionExchange(f, m, uv, sa, sb); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.String()+"/sessions-offers", func(b *testing.B) {
			// Without payloads (no stores): what a session-driven swarm of
			// thousands of peers could afford to keep in memory.
			uv, _ := reconcile.NewUniverse(u)
			cfg := reconcile.Config{Method: m, M: f.M, K: f.K, R: f.R, Hash: f.Hash, OneWay: true}
			for b.Loop() {
				A, _ := reconcile.NewSession(1, cfg, uv, sa, nil)
				B, _ := reconcile.NewSession(1, cfg, uv, sb, nil)
				if err := reconcile.Run(A, B, reconcile.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
