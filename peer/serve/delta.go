package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/delta"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Runs as deltas (wire.ProtoDelta). A fetcher updating an older version asks
// for each run of blocks an edit fell in as a delta against the older bytes
// it holds there (chunker.Basis), and rebuilds and checks the blocks itself.
//
// The work is bounded per asking peer and per peer serving: requests are
// rate-limited per peer (as offers), a request asks at most MaxDeltaRuns runs
// of at most chunker.MaxBasisRun bytes each and MaxDeltaBytes in all, a run
// and its delta count against Limits.ServeBytes (shared fairly among peers, as
// served blocks) until sent, one delta is made at a time (deltaSlot), and the
// deltas are uploads as blocks are (WithServeRate).
//
// A source answers deltas while few peers of the content are connected to it
// (MaxDeltaSwarm). In a swarm the blocks an update changed spread through the
// fetchers, each uploading what it gained; deltas, one per fetcher, would all
// come from the source. Past that it answers "busy", and the asker fetches the
// blocks from the swarm.
const (
	// MaxDeltaSwarm is the most other peers of the content connected to a
	// source for which it still answers deltas.
	MaxDeltaSwarm = 2
	// MaxDeltaRuns bounds the runs one request asks.
	MaxDeltaRuns = 256
	// MaxDeltaBytes bounds the bytes of the runs one request asks; runs
	// past it are answered missing.
	MaxDeltaBytes = 4 * chunker.MaxBasisRun
	// MaxDeltaBlocks bounds the blocks of a run (the smallest blocks of a
	// content-defined rule are a few KiB).
	MaxDeltaBlocks = 4096
)

// ServeDelta answers the asks of a request for runs as deltas, each in turn:
// a delta frame, or a missing frame when a block of the run is not held or
// the request is over its bytes.
func (p *Server) ServeDelta(ss *Stream) error {
	if err := p.admitDelta(ss); err != nil {
		return err
	}
	if p.swarmConnected(ss.C, ss.S.Conn().RemotePeer()) > MaxDeltaSwarm {
		return p.Busy(ss, "serving a swarm: fetch the blocks from it")
	}
	m := ss.C.Man
	var total int64
	for runs := 0; ; runs++ {
		f, err := ss.Next(1 + 2*binary.MaxVarintLen64 + delta.MaxSignatureLen)
		if errors.Is(err, io.EOF) {
			return nil // the asker wrote every ask, and each is answered
		}
		if err != nil {
			return err
		}
		if runs == MaxDeltaRuns {
			return fmt.Errorf("%w: over %d runs asked as deltas", wire.ErrMalformed, MaxDeltaRuns)
		}
		first, count, sig, err := wire.DecodeDeltaAsk(f, m.BlockCount(), MaxDeltaBlocks)
		if err != nil {
			return err
		}
		start, _ := m.BlockSpan(first)
		lo, ln := m.BlockSpan(first + count - 1)
		n := lo + int64(ln) - start
		total += n
		if n > chunker.MaxBasisRun || total > MaxDeltaBytes {
			err = p.sendDelta(ss, wire.AppendMissing(nil, first))
		} else {
			err = p.answerDelta(ss, first, count, int(n), sig)
		}
		if err != nil {
			return err
		}
	}
}

// answerDelta answers the ask of a run of n bytes, blocks first to
// first+count-1, with a delta against the basis whose signature is sig, or
// with a missing frame when a block of it is not held. The run and its delta
// count against Limits.ServeBytes until the answer is sent.
func (p *Server) answerDelta(ss *Stream, first, count, n int, sig []byte) error {
	held, err := p.holdServeBytes(ss, 2*n+int(delta.MaxLen(0)))
	if err != nil {
		return err
	}
	defer held.Release()
	run, err := p.readRun(ss.C, first, count, make([]byte, 0, n))
	if errors.Is(err, chunker.ErrNotHeld) {
		return p.sendDelta(ss, wire.AppendMissing(nil, first))
	}
	if err != nil {
		return err
	}
	d, err := p.makeDelta(sig, run)
	if err != nil {
		return err
	}
	return p.sendDelta(ss, append([]byte{wire.TypeDelta}, d...))
}

// admitDelta refuses a request for a delta of coded units (malformed), or
// from a peer over its rate of delta requests ("busy").
func (p *Server) admitDelta(ss *Stream) error {
	if ss.Hello.Coded {
		return fmt.Errorf("%w: a delta of coded units", wire.ErrMalformed)
	}
	if !p.deltas.allow(ss.S.Conn().RemotePeer(), p.clk.Now()) {
		return p.Busy(ss, "delta requests too often")
	}
	return nil
}

// sendDelta sends one answer of a delta request, within the upload rate.
func (p *Server) sendDelta(ss *Stream, answer []byte) error {
	if err := p.WaitUpload(len(answer)); err != nil {
		return err
	}
	if err := ss.Send(answer); err != nil {
		return err
	}
	return ss.Flush()
}

// readRun appends the blocks first to first+count-1 of c to dst, or fails
// (chunker.ErrNotHeld when one is not held).
func (p *Server) readRun(c *Content, first, count int, dst []byte) ([]byte, error) {
	var (
		buf []byte
		err error
	)
	for i := first; i < first+count; i++ {
		if buf, err = c.Store.ReadBlock(i, buf); err != nil {
			return dst, err
		}
		dst = append(dst, buf...)
	}
	return dst, nil
}

// makeDelta makes one delta at a time on this server (p.deltaSlot), for the
// work of a delta is linear in its run and a peer serving many updating
// fetchers must keep a core for its blocks. A signature not of ours is
// wire.ErrMalformed.
func (p *Server) makeDelta(sig, target []byte) ([]byte, error) {
	select {
	case p.deltaSlot <- struct{}{}:
	case <-p.ctx.Done():
		return nil, p.ctx.Err()
	}
	defer func() { <-p.deltaSlot }()
	d, err := delta.Make(sig, target)
	if errors.Is(err, delta.ErrBadSignature) {
		return nil, fmt.Errorf("%w: %w", wire.ErrMalformed, err)
	}
	return d, err
}

// swarmConnected returns how many peers of c's swarm other than except are
// connected to this one.
func (p *Server) swarmConnected(c *Content, except lpeer.ID) int {
	n := 0
	for _, id := range c.swarmPeers() {
		if id != except && p.h.Network().Connectedness(id) == network.Connected {
			n++
		}
	}
	return n
}

// ServeManifestDelta answers the ask for the content's manifest as a delta
// against the asker's older manifest (wire.ProtoManifestDelta): a delta
// frame, or the whole manifest when the delta would be no smaller. Requests
// share the per-peer rate of delta requests and the one delta made at a
// time; the work is linear in the manifest.
func (p *Server) ServeManifestDelta(ss *Stream) error {
	if err := p.admitDelta(ss); err != nil {
		return err
	}
	f, err := ss.Next(1 + delta.MaxSignatureLen)
	if err != nil {
		return err
	}
	sig, err := wire.DecodeTyped(f, wire.TypeDelta)
	if err != nil {
		return err
	}
	man, err := ss.C.Man.MarshalBinary()
	if err != nil {
		return err
	}
	d, err := p.makeDelta(sig, man)
	if err != nil {
		return err
	}
	if len(d) >= len(man) {
		return p.sendDelta(ss, append([]byte{wire.TypeManifest}, man...))
	}
	return p.sendDelta(ss, append([]byte{wire.TypeDelta}, d...))
}
