package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/delta"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// DeltaStats is what FetchDeltas rebuilt.
type DeltaStats struct {
	// Blocks and Bytes are the blocks rebuilt from deltas and checked, and
	// their bytes.
	Blocks int
	Bytes  int64
	// Rejected counts the blocks a source's delta rebuilt wrong (then
	// fetched as any block).
	Rejected int
}

// deltaRun is a basis with its signature.
type deltaRun struct {
	chunker.Basis
	sig  []byte
	done bool
}

// FetchDeltas asks srcs, in turn, for the runs of bases as deltas against
// the local bytes of each (wire.ProtoDelta), and stores the blocks they
// rebuild that pass their check, giving each source deltaWait. The runs no
// source answers stay missing, for the fetch that follows. It fails only
// when ctx ends.
func (p *Node) FetchDeltas(ctx context.Context, st *chunker.Store, bases []chunker.Basis, srcs []lpeer.ID) (DeltaStats, error) {
	var (
		ds   DeltaStats
		runs []*deltaRun
	)
	for _, b := range askable(bases) {
		sig, err := signature(b)
		if err != nil {
			p.log.Debug("no delta for a run: its basis cannot be read", "path", b.Path, "err", err)
			continue
		}
		runs = append(runs, &deltaRun{Basis: b, sig: sig})
	}
	for _, id := range srcs {
		if err := ctx.Err(); err != nil {
			return ds, err
		}
		var left []*deltaRun
		for _, r := range runs {
			if !r.done {
				left = append(left, r)
			}
		}
		if len(left) == 0 {
			break
		}
		rctx, cancel := clock.WithTimeout(ctx, p.clk, p.deltaWait(left))
		err := p.deltasFrom(rctx, st, id, left, &ds)
		cancel()
		if err != nil {
			p.log.Debug("runs as deltas", "peer", id, "err", err)
		}
	}
	return ds, ctx.Err()
}

// deltaMinRate is the slowest, in run bytes a second, a source may answer a
// request for runs as deltas (deltaWait).
const deltaMinRate = 1 << 20

// deltaWait bounds one request for runs as deltas: a stream's idle time plus
// the runs' bytes at deltaMinRate. A source that answers each ask just
// within the idle time (a stall) holds the fetch no longer; the runs it did
// not answer are fetched whole, from any source, as are those of a source
// that refuses. Deltas are most often a small part of their runs.
func (p *Node) deltaWait(runs []*deltaRun) time.Duration {
	var n int64
	for _, r := range runs {
		n += r.Bytes
	}
	return p.cfg.StreamIdle + time.Duration(n*int64(time.Second)/deltaMinRate)
}

// askable returns the bases whose runs one request may ask as deltas, in
// order, within a source's bounds (serve.MaxDeltaRuns runs of at most
// serve.MaxDeltaBlocks blocks, serve.MaxDeltaBytes in all, signatures of at
// most delta.MaxSignatureLen): a source answers the runs past them missing,
// so their bases are not read for signatures nor the signatures sent.
func askable(bases []chunker.Basis) []chunker.Basis {
	var (
		out   []chunker.Basis
		total int64
	)
	for _, b := range bases {
		if len(out) == serve.MaxDeltaRuns {
			break
		}
		if b.Count > serve.MaxDeltaBlocks || b.Bytes > chunker.MaxBasisRun || total+b.Bytes > serve.MaxDeltaBytes || delta.SignatureLen(b.Len) > delta.MaxSignatureLen {
			continue
		}
		total += b.Bytes
		out = append(out, b)
	}
	return out
}

// signature returns the signature of b's bytes.
func signature(b chunker.Basis) ([]byte, error) {
	f, err := os.Open(b.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return delta.Signature(io.NewSectionReader(f, b.Off, b.Len), b.Len)
}

// deltasFrom asks id for runs as deltas, in one request, and stores what
// they rebuild. A run rebuilt wrong ends the request (the source lies).
func (p *Node) deltasFrom(ctx context.Context, st *chunker.Store, id lpeer.ID, runs []*deltaRun, ds *DeltaStats) (err error) {
	cs, err := p.Request(ctx, id, wire.ProtoDelta, st.Manifest().ID(), false)
	if err != nil {
		return err
	}
	// The asks go out beside the answers coming in: both may fill their
	// stream windows.
	sent := make(chan error, 1)
	go func() {
		for _, r := range runs {
			if err := cs.Send(wire.AppendDeltaAsk(nil, r.First, r.Count, r.sig)); err != nil {
				sent <- err
				return
			}
		}
		if err := cs.Flush(); err != nil {
			sent <- err
			return
		}
		sent <- cs.s.CloseWrite()
	}()
	defer func() {
		if err != nil {
			cs.Reset() // and the asks with it
		} else {
			cs.Close()
		}
		<-sent
	}()
	for _, r := range runs {
		f, err := cs.Next(1 + int(delta.MaxLen(r.Bytes)))
		if err != nil {
			return err
		}
		if len(f) > 0 && f[0] == wire.TypeMissing {
			continue // the source lacks a block of it, or is over its bytes
		}
		d, err := wire.DecodeTyped(f, wire.TypeDelta)
		if err != nil {
			return err
		}
		if err := p.applyDelta(st, r, d, ds); err != nil {
			return fmt.Errorf("run of blocks %d to %d: %w", r.First, r.First+r.Count-1, err)
		}
	}
	return nil
}

// applyDelta rebuilds run r from its basis and d, and stores its blocks.
func (p *Node) applyDelta(st *chunker.Store, r *deltaRun, d []byte, ds *DeltaStats) error {
	f, err := os.Open(r.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	m := st.Manifest()
	run, err := delta.Apply(io.NewSectionReader(f, r.Off, r.Len), r.Len, d, int(r.Bytes))
	if err != nil {
		ds.Rejected += r.Count
		return err
	}
	for i := r.First; i < r.First+r.Count; i++ {
		n := m.BlockLen(i)
		if err := st.PutBlock(i, run[:n]); err != nil {
			if errors.Is(err, chunker.ErrBadBlock) {
				ds.Rejected += r.First + r.Count - i
			}
			return err
		}
		ds.Blocks++
		ds.Bytes += int64(n)
		run = run[n:]
	}
	r.done = true
	return nil
}
