package reconcile

import (
	"fmt"
	"math"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// The exact methods' steps: Bitfield and IBLT.

// onBitfield answers a peer's bitfield with exactly the blocks it lacks.
func (s *Session) onBitfield(f *FilterMsg) error {
	if f.Params != (cbfalgebra.Params{}) {
		return s.fail(fmt.Errorf("%w: bitfield with filter parameters %v", ErrMessage, f.Params))
	}
	theirs, err := DecodeBitfield(f.Data, s.u.Blocks())
	if err != nil {
		return s.fail(fmt.Errorf("reconcile: peer's bitfield: %w", err))
	}
	if theirs.Len() != f.SetSize {
		return s.fail(fmt.Errorf("%w: bitfield of %d blocks, message says %d", ErrMessage, theirs.Len(), f.SetSize))
	}
	hits := make([]uint32, 0, s.orig.Difference(theirs))
	for _, i := range s.origIdx {
		if !theirs.Has(i) {
			hits = append(hits, uint32(i))
		}
	}
	return s.answer(f.Reply, hits)
}

// buildIBLT makes this side's cell encoder, or copies the one Config.Filters keeps
// (timed as Build).
func (s *Session) buildIBLT() {
	if s.ibltEnc != nil {
		return
	}
	defer s.addSince(&s.outcome.Build, s.clock())
	if f := s.cfg.Filters; f != nil {
		s.ibltEnc = f.ibltEncoder(s.cfg.Seed).clone()
	} else {
		s.ibltEnc = newIBLTEncoder(s.cfg.Seed, s.origIdx)
	}
}

// sendCells queues the next n cells of this side's IBLT.
func (s *Session) sendCells(n int) error {
	start := s.ibltSent
	if n < 1 || start+n > ibltMaxCells(s.u.Blocks()) {
		return s.fail(fmt.Errorf("%w: %d IBLT cells after %d (at most %d)", ErrLimit, n, start, ibltMaxCells(s.u.Blocks())))
	}
	s.ibltEnc.extend(start + n)
	s.ibltSent += n
	s.outcome.Cells += n
	s.out = append(s.out, Message{Type: MsgFilter, Session: s.id, Filter: FilterMsg{
		Method: IBLT, Params: s.params, Universe: s.u.Blocks(), SetSize: s.orig.Len(),
		Reply: !s.cfg.OneWay, Data: appendIBLTCells(nil, start, s.ibltEnc.cells[start:start+n]),
	}})
	return nil
}

// onCells takes a batch of the initiator's cells: the responder peels the
// difference, and either asks for more cells or answers exactly.
func (s *Session) onCells(f *FilterMsg) error {
	switch {
	case s.initiator || !s.needFilter:
		return s.fail(fmt.Errorf("%w: IBLT cells", ErrState))
	case f.Method != s.method:
		return s.fail(fmt.Errorf("%w: peer runs %v, this side %v", ErrMethod, f.Method, s.method))
	case f.Universe != s.u.Blocks():
		return s.fail(fmt.Errorf("%w: peer has %d blocks, this side %d", ErrUniverse, f.Universe, s.u.Blocks()))
	case len(f.Data) > s.limits.MaxFilterBytes:
		return s.fail(fmt.Errorf("%w: filter of %d bytes > %d", ErrLimit, len(f.Data), s.limits.MaxFilterBytes))
	case f.Params != (cbfalgebra.Params{Seed: s.cfg.Seed}):
		return s.fail(fmt.Errorf("%w: peer's IBLT %v, this side seed=%d", cbfalgebra.ErrNotHomologous, f.Params, s.cfg.Seed))
	}
	if s.ibltDec == nil {
		s.ibltPeerSize, s.ibltReply = f.SetSize, f.Reply
		s.params, s.outcome.Params = f.Params, f.Params
		s.buildIBLT()
		s.ibltDec = newIBLTDecoder(s.cfg.Seed, s.u.Blocks())
	} else if f.SetSize != s.ibltPeerSize || f.Reply != s.ibltReply {
		return s.fail(fmt.Errorf("%w: IBLT batch changes the set size or reply flag", ErrMessage))
	}
	dec := s.ibltDec
	start, cells, err := decodeIBLTCells(f.Data, ibltMaxCells(s.u.Blocks())-len(dec.cells))
	switch {
	case err != nil:
		return s.fail(fmt.Errorf("reconcile: peer's IBLT cells: %w", err))
	case start != len(dec.cells) || len(cells) == 0:
		return s.fail(fmt.Errorf("%w: %d IBLT cells from %d, expected cells from %d", ErrState, len(cells), start, len(dec.cells)))
	}
	s.responded = true
	s.outcome.Cells += len(cells)
	end := start + len(cells)
	s.ibltEnc.extend(end)
	if err := dec.add(cells, s.ibltEnc.cells[start:end]); err != nil {
		return s.fail(err)
	}
	if !dec.done() {
		more := s.ibltMore()
		if more < 1 {
			return s.fail(fmt.Errorf("%w: not decoded after %d cells", ErrDecode, len(dec.cells)))
		}
		s.out = append(s.out, Message{Type: MsgMore, Session: s.id, Cells: more})
		return nil
	}
	aOnly, bOnly, err := dec.result()
	if err == nil {
		err = s.checkDecoded(aOnly, bOnly)
	}
	if err != nil {
		return s.fail(err)
	}
	s.needFilter = false
	if err := s.respond(bOnly); err != nil {
		return err
	}
	if s.ibltReply {
		s.out = append(s.out, Message{Type: MsgWant, Session: s.id, Indices: aOnly})
		s.needResponse = true
	}
	return nil
}

// checkDecoded verifies a decoded difference against what this side knows: every
// element the peer alone holds is outside this side's set, every element this side
// alone holds is in it, and the set sizes add up. A checksum collision or a hostile
// peer fails here (ErrDecode) rather than producing a wrong answer.
func (s *Session) checkDecoded(peerOnly, mineOnly []uint32) error {
	for _, x := range peerOnly {
		if s.orig.Has(int(x)) {
			return fmt.Errorf("%w: block %d decoded as the peer's alone is held here", ErrDecode, x)
		}
	}
	for _, x := range mineOnly {
		if !s.orig.Has(int(x)) {
			return fmt.Errorf("%w: block %d decoded as held here is not", ErrDecode, x)
		}
	}
	if s.ibltPeerSize-len(peerOnly) != s.orig.Len()-len(mineOnly) {
		return fmt.Errorf("%w: set sizes %d and %d do not match a difference of %d and %d",
			ErrDecode, s.ibltPeerSize, s.orig.Len(), len(peerOnly), len(mineOnly))
	}
	return nil
}

// ibltMore sizes the responder's request for more cells from the estimated size
// of the whole difference (at least the difference of the set sizes): never less than a quarter more than arrived so far, nor past the
// session's cap. It returns 0 when the cap is reached.
func (s *Session) ibltMore() int {
	dec := s.ibltDec
	n := len(dec.cells)
	lower := math.Abs(float64(s.ibltPeerSize - s.orig.Len()))
	target := ibltCellsFor(max(dec.estimate(), lower))
	target = max(target, n+max(n/4, 8))
	target = min(target, ibltMaxCells(s.u.Blocks()))
	return target - n
}

// onMore sends the next batch of cells the responder asked for.
func (s *Session) onMore(m *Message) error {
	if !s.initiator || s.method != IBLT || !s.needResponse {
		return s.fail(fmt.Errorf("%w: more", ErrState))
	}
	return s.sendCells(m.Cells)
}

// onWant sends the blocks the responder found it lacks (two-way IBLT).
func (s *Session) onWant(m *Message) error {
	if !s.needWant {
		return s.fail(fmt.Errorf("%w: want", ErrState))
	}
	for j, i := range m.Indices {
		if j > 0 && i <= m.Indices[j-1] {
			return s.fail(fmt.Errorf("%w: wanted indices not strictly increasing", ErrMessage))
		}
		if !s.orig.Has(int(i)) {
			return s.fail(fmt.Errorf("%w: peer wants block %d, which this side does not hold", ErrIndex, i))
		}
	}
	s.needWant = false
	return s.respond(m.Indices)
}
