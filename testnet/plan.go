package testnet

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// linkAll joins every neighbour pair, a few at a time.
func linkAll(ctx context.Context, fab fabric, pairs []pair, bandwidth float64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pairs))
	sem := make(chan struct{}, 16)
	for k, p := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[k] = fab.link(ctx, p, bandwidth)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// holdingsPlan returns the units each node starts with: nothing but the seed's
// whole file (seedNode >= 0), or a random cfg.Hold share each, every unit held
// by at least one stable node (honest, there from start to end: see roles).
func holdingsPlan(cfg Config, units, blocks, seedNode int, roles []role, rng *rand.Rand) [][]int {
	hold := make([][]int, cfg.Nodes)
	if seedNode >= 0 {
		return hold
	}
	share := int(cfg.Hold*float64(units) + 0.5)
	if cfg.Method == reconcile.Byers {
		// As the simulator: a Byers peer holds as many coded blocks as a
		// complete peer holds source blocks.
		share = min(units, int(cfg.Hold*float64(blocks)+0.5))
	}
	share = max(1, share)
	covered := make([]bool, units)
	var stable []int
	for i := range hold {
		hold[i] = rng.Perm(units)[:share]
		if !roles[i].stable() {
			continue
		}
		stable = append(stable, i)
		for _, u := range hold[i] {
			covered[u] = true
		}
	}
	for u, ok := range covered {
		if !ok {
			i := stable[rng.IntN(len(stable))]
			hold[i] = append(hold[i], u)
		}
	}
	for _, h := range hold {
		slices.Sort(h)
	}
	return hold
}

// blockOf returns block i of data.
func blockOf(data []byte, m *chunker.Manifest, i int) []byte {
	lo, n := m.BlockSpan(i)
	return data[lo : lo+int64(n)]
}

// allHeld are the holdings of a seed of n units.
type allHeld int

func (a allHeld) Has(i int) bool { return i >= 0 && i < int(a) }

// seed32 stretches a seed to a ChaCha8 key.
func seed32(s uint64) [32]byte {
	var k [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(k[8*i:], s+uint64(i)*0x9e3779b97f4a7c15)
	}
	return k
}
