package swarm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/delta"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// manifestTries is how many rounds over its sources a fetch makes for the
// manifest; a stream reset, a timeout or a "busy" answer is tried again after
// a pause that doubles from manifestRetry.
const (
	manifestTries = 3
	manifestRetry = 250 * time.Millisecond
)

// minManifestDelta is the least older manifest a fetch asks a delta against:
// below it, the signature and the round trip cost about what they save.
const minManifestDelta = 16 << 10

// FetchManifest gets the manifest of root from the first of srcs that has
// it and checks it against the root, trying each source again (with
// backoff) after a failure of the stream. With basis, the manifest of an
// older version of the content (of minManifestDelta bytes or more), it first
// asks each source for the manifest as a delta against it
// (wire.ProtoManifestDelta), and for the whole manifest when that fails.
func (p *Node) FetchManifest(ctx context.Context, root chunker.ID, srcs []lpeer.ID, basis *chunker.Manifest) (*chunker.Manifest, error) {
	var errs []error
	old, sig := manifestBasis(basis)
	if basis != nil && sig == nil {
		p.log.Debug("no manifest delta: the older manifest is small or its signature over the bound")
	}
	retry := srcs
	for round := range manifestTries {
		if round > 0 {
			t := p.clk.NewTimer(manifestRetry << (round - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.Chan():
			}
		}
		var again []lpeer.ID
		for _, id := range retry {
			if sig != nil && round == 0 {
				m, err := p.fetchManifestDelta(ctx, root, id, old, sig)
				if err == nil {
					return m, nil
				}
				p.log.Debug("manifest as a delta", "peer", id, "err", err)
			}
			m, err := p.fetchManifestFrom(ctx, root, id)
			if err == nil {
				return m, nil
			}
			switch {
			case errors.Is(err, wire.ErrManifestMismatch):
				p.log.Warn("peer sent a manifest that does not match the ticket", "peer", id)
			case errors.Is(err, wire.ErrMalformed), errors.Is(err, wire.ErrFrameTooLarge), errors.Is(err, wire.ErrUnknownRoot):
			default:
				again = append(again, id)
			}
			if round == manifestTries-1 || !slices.Contains(again, id) {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
			}
		}
		if retry = again; len(retry) == 0 {
			break
		}
	}
	for _, e := range errs {
		if errors.Is(e, wire.ErrManifestMismatch) {
			return nil, fmt.Errorf("%w: %w", wire.ErrManifestMismatch, errors.Join(errs...))
		}
	}
	return nil, fmt.Errorf("%w: no peer sent the manifest: %w", wire.ErrNoPeers, errors.Join(errs...))
}

// AskManifest sends a manifest request (with the hello's Coded flag when
// coded: for the header of the content's altUnits) to id and returns the
// body of the answer, of at most max bytes.
func (p *Node) AskManifest(ctx context.Context, root chunker.ID, id lpeer.ID, coded bool, max int) ([]byte, error) {
	cs, err := p.Request(ctx, id, wire.ProtoManifest, root, coded)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if err := cs.Flush(); err != nil {
		return nil, err
	}
	f, err := cs.Next(1 + max)
	if err != nil {
		cs.Reset()
		return nil, err
	}
	body, err := wire.DecodeTyped(f, wire.TypeManifest)
	if err != nil {
		cs.Reset()
		return nil, err
	}
	return body, nil
}

func (p *Node) fetchManifestFrom(ctx context.Context, root chunker.ID, id lpeer.ID) (*chunker.Manifest, error) {
	body, err := p.AskManifest(ctx, root, id, false, p.cfg.Limits.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := chunker.DecodeManifestID(body, root, p.cfg.Limits.MaxManifestBytes)
	if err != nil {
		if errors.Is(err, chunker.ErrManifestMismatch) {
			return nil, fmt.Errorf("%w: %w", wire.ErrManifestMismatch, err)
		}
		return nil, fmt.Errorf("%w: manifest: %w", wire.ErrMalformed, err)
	}
	return m, nil
}

// OfferManifest offers m to id, which answered that it does not serve m's
// content (wire.ProtoOffer): nil when id now serves the blocks of it that
// its other contents hold, an error (wrapping wire.ErrRemote when it holds
// none, wire.ErrBusy when it has no room now) otherwise.
func (p *Node) OfferManifest(ctx context.Context, id lpeer.ID, m *chunker.Manifest) error {
	ctx, cancel := clock.WithTimeout(ctx, p.clk, p.cfg.StreamIdle)
	defer cancel()
	cs, err := p.Request(ctx, id, wire.ProtoOffer, m.ID(), false)
	if err != nil {
		return err
	}
	defer cs.Close()
	body, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	if err := cs.Send([]byte{wire.TypeManifest}, body); err != nil {
		return err
	}
	if err := cs.Flush(); err != nil {
		return err
	}
	f, err := cs.Next(1 << 10)
	if err != nil {
		cs.Reset()
		return err
	}
	_, err = wire.DecodeTyped(f, wire.TypeHave)
	return err
}

// manifestBasis returns the encoding of basis, an older manifest, and its
// signature, for a manifest to come as a delta against it: nil when there is
// none, it is under minManifestDelta bytes, or its signature is over
// delta.MaxSignatureLen.
func manifestBasis(basis *chunker.Manifest) (old, sig []byte) {
	if basis == nil || basis.EncodedLen() < minManifestDelta {
		return nil, nil
	}
	old, err := basis.MarshalBinary()
	if err != nil {
		return nil, nil
	}
	sig, err = delta.Signature(bytes.NewReader(old), int64(len(old)))
	if err != nil || len(sig) > delta.MaxSignatureLen {
		return nil, nil
	}
	return old, sig
}

// fetchManifestDelta asks id for the manifest of root as a delta against
// old, an older manifest whose signature is sig, and checks what it
// rebuilds against the root.
func (p *Node) fetchManifestDelta(ctx context.Context, root chunker.ID, id lpeer.ID, old, sig []byte) (*chunker.Manifest, error) {
	cs, err := p.Request(ctx, id, wire.ProtoManifestDelta, root, false)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if err := cs.Send([]byte{wire.TypeDelta}, sig); err != nil {
		return nil, err
	}
	if err := cs.Flush(); err != nil {
		return nil, err
	}
	limit := p.cfg.Limits.MaxManifestBytes
	f, err := cs.Next(1 + limit)
	if err != nil {
		cs.Reset()
		return nil, err
	}
	body, err := wire.DecodeTyped(f, wire.TypeManifest)
	if err != nil && len(f) > 0 && f[0] == wire.TypeDelta {
		body, err = delta.ApplyMax(bytes.NewReader(old), int64(len(old)), f[1:], limit)
	}
	if err != nil {
		return nil, err
	}
	m, err := chunker.DecodeManifestID(body, root, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest rebuilt from a delta: %w", wire.ErrMalformed, err)
	}
	return m, nil
}
