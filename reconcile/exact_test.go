package reconcile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMethodsProperty: for random sets of every shape, every method, one-way and
// two-way, with blocks and with offers: nothing is missed, the exact methods send
// nothing redundant, two-way leaves both sides with S_A ∪ S_B, and every payload
// that arrives is the right one.
func TestMethodsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := 60
	if testing.Short() {
		cases = 20
	}
	for c := range cases {
		u := 1 + rng.IntN(3000)
		if c%5 == 0 {
			u = 1 + rng.IntN(40)
		}
		na, nb := rng.IntN(u+1), rng.IntN(u+1)
		lo, hi := max(0, na+nb-u), min(na, nb)
		shared := lo + rng.IntN(hi-lo+1)
		a, b := splitSets(rng, u, na, nb, shared)
		uv, _ := NewUniverse(u)
		for _, m := range []Method{Complete, Bitfield, IBLT, CCBF} {
			for _, oneWay := range []bool{true, false} {
				withBlocks := rng.IntN(2) == 0
				name := fmt.Sprintf("u=%d na=%d nb=%d shared=%d %v oneway=%v blocks=%v", u, na, nb, shared, m, oneWay, withBlocks)
				cfg := Config{Method: m, OneWay: oneWay, Seed: rng.Uint64() % 4}
				var sa, sb Blocks
				if withBlocks {
					sa, sb = storeOf(a, 8), storeOf(b, 8)
				}
				A, _ := NewSession(uint64(c), cfg, uv, a, sa)
				B, _ := NewSession(uint64(c), cfg, uv, b, sb)
				if err := Run(A, B, Limits{}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				oa, ob := A.Outcome(), B.Outcome()
				if oa.Missed != 0 || ob.Missed != 0 {
					t.Fatalf("%s: missed %d, %d", name, oa.Missed, ob.Missed)
				}
				if m.Exact() && (oa.Redundant != 0 || ob.Redundant != 0) {
					t.Fatalf("%s: exact method sent redundant blocks: %d, %d", name, oa.Redundant, ob.Redundant)
				}
				if got, want := A.Held().Len(), na+nb-shared; got != want {
					t.Fatalf("%s: A holds %d, want %d", name, got, want)
				}
				if !oneWay && B.Held().Len() != na+nb-shared {
					t.Fatalf("%s: B holds %d, want %d", name, B.Held().Len(), na+nb-shared)
				}
				if withBlocks {
					for _, i := range A.Wanted() {
						if !bytes.Equal(sa.Block(i), blockData(i, 8)) {
							t.Fatalf("%s: block %d arrived wrong", name, i)
						}
					}
				}
				if m == IBLT && oa.Cells != ob.Cells {
					t.Fatalf("%s: A sent %d cells, B received %d", name, oa.Cells, ob.Cells)
				}
			}
		}
	}
}

// TestIBLTCellsPerElement checks the rateless code's overhead by feeding cells one
// at a time: the prefix that decodes a difference of d >= 100 elements is at most
// 2 cells per element (the paper reports about 1.35-1.5), and the session, which
// must ask in batches, stays within 2.5.
func TestIBLTCellsPerElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{100, 300, 1000} {
		total, sessionCells := 0, 0
		const trials = 5
		for trial := range trials {
			u := 4 * d
			a, b := splitSets(rng, u, d, d, d/2)
			diff := a.Difference(b) + b.Difference(a)
			seed := uint64(trial)
			ea, eb := newIBLTEncoder(seed, a.Indices()), newIBLTEncoder(seed, b.Indices())
			dec := newIBLTDecoder(seed, u)
			n := 0
			for !dec.done() {
				if n > 10*diff {
					t.Fatalf("d=%d: no decode after %d cells", diff, n)
				}
				ea.extend(n + 1)
				eb.extend(n + 1)
				if err := dec.add(ea.cells[n:n+1], eb.cells[n:n+1]); err != nil {
					t.Fatal(err)
				}
				n++
			}
			aOnly, bOnly, err := dec.result()
			if err != nil {
				t.Fatal(err)
			}
			if len(aOnly) != a.Difference(b) || len(bOnly) != b.Difference(a) {
				t.Fatalf("decoded %d and %d, want %d and %d", len(aOnly), len(bOnly), a.Difference(b), b.Difference(a))
			}
			for _, x := range aOnly {
				if !a.Has(int(x)) || b.Has(int(x)) {
					t.Fatalf("wrong element %d", x)
				}
			}
			total += n
			uv, _ := NewUniverse(u)
			A, _ := NewSession(1, Config{Method: IBLT, OneWay: true, Seed: seed}, uv, a, nil)
			B, _ := NewSession(1, Config{Method: IBLT, OneWay: true, Seed: seed}, uv, b, nil)
			if err := Run(A, B, Limits{}); err != nil {
				t.Fatal(err)
			}
			sessionCells += A.Outcome().Cells
		}
		per := float64(total) / float64(trials*d)
		perSession := float64(sessionCells) / float64(trials*d)
		t.Logf("d=%d: %.3f cells per element decoding cell by cell, %.3f in sessions", d, per, perSession)
		if per > 2 {
			t.Errorf("d=%d: %.2f cells per element > 2", d, per)
		}
		if perSession > 2.5 {
			t.Errorf("d=%d: sessions sent %.2f cells per element > 2.5", d, perSession)
		}
	}
}

// TestIBLTDetectsBadCells: a peer that sends garbage, or cells of another set than
// it claims, makes the responder fail with an error, never answer wrongly.
func TestIBLTDetectsBadCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const u = 500
	a, b := splitSets(rng, u, 200, 200, 150)
	uv, _ := NewUniverse(u)
	cfg := Config{Method: IBLT, OneWay: true}

	// Set size lie: cells of a, but SetSize says 199.
	A, _ := NewSession(1, cfg, uv, a, nil)
	B, _ := NewSession(1, cfg, uv, b, nil)
	A.Start()
	for _, m := range A.Ready() {
		m.Filter.SetSize--
		B.Step(m)
	}
	for i := 0; i < 20 && !B.Done(); i++ {
		for _, m := range B.Ready() {
			A.Step(m)
		}
		for _, m := range A.Ready() {
			m.Filter.SetSize--
			B.Step(m)
		}
	}
	if !errors.Is(B.Err(), ErrDecode) {
		t.Fatalf("set size lie: B.Err() = %v, want ErrDecode", B.Err())
	}

	// Random cells: never a wrong answer; either more is asked for, or ErrDecode.
	for trial := range 200 {
		B, _ := NewSession(1, cfg, uv, b, nil)
		n := 1 + rng.IntN(64)
		cells := make([]ibltCell, n)
		for i := range cells {
			cells[i] = ibltCell{sum: rng.Uint64(), count: int64(rng.IntN(3) - 1)}
		}
		if trial%2 == 0 { // plausible pure cells of elements b holds, claimed as a's
			for i := range cells {
				x := uint64(b.Indices()[rng.IntN(b.Len())])
				cells[i] = ibltCell{sum: ibltHash(0, x), count: 1}
			}
		}
		m := Message{Type: MsgFilter, Session: 1, Filter: FilterMsg{Method: IBLT, Universe: u, SetSize: 200,
			Data: appendIBLTCells(nil, 0, cells)}}
		err := B.Step(m)
		out := B.Ready()
		if err != nil {
			continue
		}
		if len(out) != 1 || out[0].Type != MsgMore {
			t.Fatalf("trial %d: garbage cells answered with %v", trial, out)
		}
	}
}

// TestIBLTCellCodec round-trips cells and rejects malformed batches.
func TestIBLTCellCodec(t *testing.T) {
	for _, start := range []int{0, 17, 1 << 30} {
		cells := []ibltCell{{sum: 1<<64 - 1, count: -3}, {}, {sum: 5, count: 1 << 40}}
		b := appendIBLTCells(nil, start, cells)
		got0, got, err := decodeIBLTCells(b, 100)
		if err != nil || got0 != start || !slices.Equal(got, cells) {
			t.Fatalf("start=%d: got %d %v %v", start, got0, got, err)
		}
		if _, _, err := decodeIBLTCells(b, 2); !errors.Is(err, ErrLimit) {
			t.Fatalf("limit: %v", err)
		}
		for cut := range len(b) {
			if _, _, err := decodeIBLTCells(b[:cut], 100); err == nil {
				t.Fatalf("truncated at %d accepted", cut)
			}
		}
		if _, _, err := decodeIBLTCells(append(b, 0), 100); err == nil {
			t.Fatal("trailing byte accepted")
		}
	}
}

// TestIBLTHash: the element hash is a bijection, inverted by ibltUnhash, for
// every seed; distinct seeds give unrelated hashes.
func TestIBLTHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 10000 {
		seed, x := rng.Uint64(), rng.Uint64()
		if rng.IntN(2) == 0 {
			x %= 1 << 24
		}
		h := ibltHash(seed, x)
		if got := ibltUnhash(seed, h); got != x {
			t.Fatalf("unhash(hash(%d)) = %d (seed %d)", x, got, seed)
		}
		if ibltHash(seed+1, x) == h {
			t.Fatalf("seeds %d and %d hash %d alike", seed, seed+1, x)
		}
	}
	// A random sum decodes to an index inside a universe of 2^24 blocks with
	// probability 2^-40: none of a million do.
	for range 1 << 20 {
		if ibltUnhash(0, rng.Uint64()) < 1<<24 {
			t.Fatal("a random cell looks pure")
		}
	}
}

// TestBitfieldCodec round-trips sets and rejects bad lengths and stray bits.
func TestBitfieldCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, u := range []int{0, 1, 7, 8, 9, 63, 64, 65, 1000} {
		s := NewSet(u)
		for i := range u {
			if rng.IntN(3) == 0 {
				s.Add(i)
			}
		}
		b := s.AppendBitfield(nil)
		if len(b) != (u+7)/8 {
			t.Fatalf("u=%d: %d bytes", u, len(b))
		}
		got, err := DecodeBitfield(b, u)
		if err != nil || got.Len() != s.Len() || !slices.Equal(got.Indices(), s.Indices()) {
			t.Fatalf("u=%d: round trip: %v", u, err)
		}
		if _, err := DecodeBitfield(append(b, 0), u); !errors.Is(err, ErrMessage) {
			t.Fatalf("u=%d: long bitfield: %v", u, err)
		}
		if u%8 != 0 {
			b[len(b)-1] |= 0x80
			if _, err := DecodeBitfield(b, u); !errors.Is(err, ErrMessage) {
				t.Fatalf("u=%d: stray bit: %v", u, err)
			}
		}
	}
}
