package swarm

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/delta"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// TestAskable: the runs asked as deltas stay within what a source answers,
// in order; a run past a bound is left out, and a later one that fits is
// still asked.
func TestAskable(t *testing.T) {
	run := func(first int, bytes int64) chunker.Basis {
		return chunker.Basis{First: first, Count: 1, Bytes: bytes, Len: bytes}
	}
	firsts := func(bs []chunker.Basis) []int {
		var f []int
		for _, b := range bs {
			f = append(f, b.First)
		}
		return f
	}
	const mb = 1 << 20
	many := make([]chunker.Basis, serve.MaxDeltaRuns+10)
	for i := range many {
		many[i] = run(i, 1024)
	}
	bigSig := chunker.Basis{First: 7, Count: 1, Bytes: mb, Len: 1 << 40} // its signature would be over the bound
	if delta.SignatureLen(bigSig.Len) <= delta.MaxSignatureLen {
		t.Fatalf("a basis of %d bytes has a signature of %d bytes, within the bound: pick a larger one", bigSig.Len, delta.SignatureLen(bigSig.Len))
	}
	tests := []struct {
		name  string
		bases []chunker.Basis
		want  []int
	}{
		{"none", nil, nil},
		{"all fit", []chunker.Basis{run(1, mb), run(5, 2*mb)}, []int{1, 5}},
		{"the bytes bound", []chunker.Basis{run(0, 8*mb), run(10, 8*mb), run(20, 8*mb), run(30, 8*mb), run(40, mb), run(50, 1)}, []int{0, 10, 20, 30}},
		{"a smaller run after the bound still fits", []chunker.Basis{run(0, 8*mb), run(10, 8*mb), run(20, 8*mb), run(30, 7*mb), run(40, 2*mb), run(50, mb)}, []int{0, 10, 20, 30, 50}},
		{"a run over the basis run bound", []chunker.Basis{run(0, chunker.MaxBasisRun+1), run(3, mb)}, []int{3}},
		{"too many blocks", []chunker.Basis{{First: 0, Count: serve.MaxDeltaBlocks + 1, Bytes: mb, Len: mb}, run(9, mb)}, []int{9}},
		{"a signature too long", []chunker.Basis{bigSig, run(9, mb)}, []int{9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firsts(askable(tt.bases))
			if len(got) != len(tt.want) {
				t.Fatalf("asked %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("asked %v, want %v", got, tt.want)
				}
			}
		})
	}
	if got := askable(many); len(got) != serve.MaxDeltaRuns || got[len(got)-1].First != serve.MaxDeltaRuns-1 {
		t.Errorf("of %d runs asked %d, the last %d; want the first %d", len(many), len(got), got[len(got)-1].First, serve.MaxDeltaRuns)
	}
}
