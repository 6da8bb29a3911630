package testnet

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// tally adds to res what the peers' lives report: the fetchers' summaries
// (blocks received, redundant, pushed, false offers, rejected, decode
// time), who left, joined late or rejoined, the completions of the
// fetchers that need the file (in the described network's seconds: times
// divided by scale) and the liars. It returns the nodes whose files are to
// be verified: the seed, if any, and those fetchers.
func (w *swarm) tally(res *Result, seedNode, blockSize int, scale float64) []int {
	var checked []int
	if seedNode >= 0 {
		checked = append(checked, seedNode)
	}
	for i, o := range w.outs {
		n, r := w.nodes[i], w.roles[i]
		if !n.fetch || r.liar {
			continue
		}
		for _, sum := range o.sums {
			if sum == nil {
				continue
			}
			res.BlocksReceived += (sum.Received + int64(blockSize) - 1) / int64(blockSize)
			res.Redundant += int64(sum.Redundant)
			if res.NAT != nil {
				res.NAT.FetchRelayedBytes += sum.RelayedBytes
			}
			res.Pushed += int64(sum.Pushed)
			res.FalseOffers += int64(sum.FalseOffers)
			res.Rejected += int64(sum.Rejected)
			res.DecodeSeconds += sum.DecodeSeconds
		}
		if o.left {
			res.Left++
		}
		if o.late {
			res.LateJoined++
		}
		if o.rejoined {
			res.Rejoined++
			if len(o.sums) == 2 && o.sums[1] != nil {
				res.ResumedBlocks += int64(o.sums[1].Resumed)
				res.BackCorrupt += int64(o.sums[1].Rejected)
			}
		}
		if !r.needed() {
			continue
		}
		checked = append(checked, i)
		if o.err != nil {
			if len(res.Errors) < 10 {
				res.Errors = append(res.Errors, fmt.Sprintf("node %d: %v", i, o.err))
			}
			continue
		}
		if n.store.Complete() {
			res.Completed++
			res.Completions = append(res.Completions, o.at.Seconds()/scale)
			if !o.left {
				res.StayedMaxS = max(res.StayedMaxS, o.at.Seconds()/scale)
			}
			if o.rejoined {
				res.BackMaxS = max(res.BackMaxS, (o.at-o.away).Seconds()/scale)
			}
		}
	}
	for _, r := range w.roles {
		if r.liar {
			res.Liars++
			if r.lie == LiarCorrupt {
				res.CorruptLiars++
			} else {
				res.PhantomLiars++
			}
		}
	}
	return checked
}

// verify checks that the file of every node checked, at its final name,
// re-hashes (cut by m's rule) to m's root, counting res.Identical and
// noting the first errors.
func verify(ctx context.Context, res *Result, nodes []*node, checked []int, m *chunker.Manifest) {
	res.Identical = 0
	root, bs, opts := m.ID(), m.BlockSize(), []chunker.ChunkOption(nil)
	if m.ContentDefined() {
		bs, opts = 0, []chunker.ChunkOption{chunker.WithChunking(m.Chunking())}
	}
	for _, i := range checked {
		n := nodes[i]
		mm, err := chunker.ChunkPath(ctx, filepath.Join(n.dir, fileName), bs, opts...)
		switch {
		case err != nil:
			if len(res.Errors) < 10 {
				res.Errors = append(res.Errors, fmt.Sprintf("node %d: verify: %v", i, err))
			}
		case mm.ID() != root:
			if len(res.Errors) < 10 {
				res.Errors = append(res.Errors, fmt.Sprintf("node %d: root %s, want %s", i, mm.ID(), root))
			}
		default:
			res.Identical++
		}
	}
}
