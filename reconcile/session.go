package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
)

// Session is one side of one reconciliation between two peers over one file: a pure
// state machine in the style of etcd raft. The caller feeds it the peer's messages
// with [Session.Step], collects the messages to send with [Session.Ready], and stops
// when [Session.Done]. It does no IO, keeps no global state and is not safe for
// concurrent use (one goroutine per session, as many sessions as wanted).
//
// The initiator calls [Session.Start] first; the responder waits for the
// initiator's filter. In the two-way exchange (the default) the messages are:
//
//	A -> B  filter(S_A, reply)
//	B -> A  filter(S_B), then offer/blocks: what B holds that A may lack
//	A -> B  offer/blocks: what A holds that B may lack
//
// With Config.OneWay only the first two messages flow, without B's filter. Bitfield
// and CCBF sessions exchange the same messages; IBLT sessions add MsgMore round
// trips and, two-way, a MsgWant (see the package documentation).
type Session struct {
	id        uint64
	cfg       Config
	method    Method
	u         *Universe
	held      *Set // grows as blocks arrive
	orig      *Set // the blocks held at creation: what this side offers
	origIdx   []int
	store     Blocks
	initiator bool
	now       func() time.Time // Config.Now; nil: no timing

	params  cbfalgebra.Params
	loc     *locator
	mine    *cbfalgebra.CBF
	mineBF  *cbfalgebra.BloomFilter
	limits  Limits
	started bool

	needFilter, needResponse bool
	responded                bool

	// IBLT state: this side's cells, the difference decoder (responder), the
	// peer's set size and reply flag from its first batch, and whether the
	// initiator still awaits the responder's MsgWant (two-way).
	ibltEnc      *ibltEncoder
	ibltSent     int // cells this initiator sent
	ibltDec      *ibltDecoder
	ibltPeerSize int
	ibltReply    bool
	needWant     bool

	// Byers with a code and a store: the coded blocks held, and whether the
	// source is ready to decode (the collector claimed it).
	coded     *erasure.Collector
	decodable bool

	// peerCBF is a copy of the peer's CBF (Config.KeepPeerFilter).
	peerCBF *cbfalgebra.CBF

	out     []Message
	outcome Outcome
	wanted  []int
	source  [][]byte
	err     error
}

// NewSession returns one side of a session. id tags its messages (the peer's
// session must use the same id). held is the set of blocks this side holds (the
// session keeps its own copy); u describes the file; store gives block payloads, or
// is nil to exchange indices only.
func NewSession(id uint64, cfg Config, u *Universe, held *Set, store Blocks) (*Session, error) {
	m := cfg.method()
	if !m.Valid() {
		return nil, fmt.Errorf("%w: %v", ErrMethod, m)
	}
	if u == nil || held == nil || held.Universe() != u.Blocks() {
		return nil, fmt.Errorf("%w: held set and universe disagree", ErrUniverse)
	}
	if cfg.Code != nil && cfg.Code.N() != u.Blocks() {
		return nil, fmt.Errorf("%w: code has %d blocks, universe %d", ErrUniverse, cfg.Code.N(), u.Blocks())
	}
	if cfg.Code != nil && store != nil && store.BlockSize() != cfg.Code.BlockSize() {
		return nil, fmt.Errorf("%w: store blocks of %d bytes, code blocks of %d",
			ErrUniverse, store.BlockSize(), cfg.Code.BlockSize())
	}
	if cfg.Filters != nil && !cfg.Filters.matches(u, held) {
		return nil, fmt.Errorf("%w: Config.Filters was made for another set", ErrUniverse)
	}
	if store != nil && store.BlockSize() < 1 {
		return nil, fmt.Errorf("%w: block size %d", ErrUniverse, store.BlockSize())
	}
	s := &Session{
		id: id, cfg: cfg, method: m, u: u,
		held: held.Clone(), orig: held.Clone(), origIdx: held.Indices(),
		store: store, limits: cfg.Limits.withDefaults(), now: cfg.Now,
		needFilter: true,
	}
	if m == Byers && cfg.Code != nil && store != nil {
		// One generation: the universe is the code's nn coded blocks.
		gens, err := erasure.NewGenerations(cfg.Code, int64(cfg.Code.K())*int64(cfg.Code.BlockSize()))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUniverse, err)
		}
		s.coded = erasure.NewCollector(gens)
		for _, i := range s.origIdx {
			_, ready, err := s.coded.Add(i, store.Block(i))
			if err != nil {
				return nil, fmt.Errorf("%w: the store's held block %d: %w", ErrUniverse, i, err)
			}
			s.decodable = s.decodable || ready
		}
	}
	s.outcome.Method = m
	s.outcome.WireSent = map[MsgType]int{}
	s.outcome.WireReceived = map[MsgType]int{}
	return s, nil
}

// Start makes this side the initiator: it builds the filter of its blocks with
// parameters chosen from its set size (Config.Params) and queues it.
//
// With a Blocks store (payloads in the answer), Complete and CCBF size the filter
// for u - n blocks rather than n when u - n > n and the n held blocks' payloads
// outweigh the larger filter (about r*BitsPerElement/8 bytes per block of u - n):
// the peer sends back a block x this side holds when x's counters of
// ~CBF(S) = CBF(U \ S), a filter of u - n blocks (T2), are all nonzero, so a filter
// sized for n saturates when u >> n and nearly every held block the peer also holds
// comes back as payload. Without a store an offered block costs its index (about
// a byte), less than the larger filter, so the filter is sized for n.
func (s *Session) Start() error {
	if s.err != nil {
		return s.err
	}
	if s.started || !s.needFilter || s.responded {
		return fmt.Errorf("%w: Start on a session already under way", ErrState)
	}
	defer s.addSince(&s.outcome.Compute, s.clock())
	s.started, s.initiator = true, true
	switch s.method {
	case Bitfield:
		s.needResponse = true
		s.needFilter = !s.cfg.OneWay
		return s.sendFilter(!s.cfg.OneWay)
	case IBLT:
		s.needResponse, s.needWant, s.needFilter = true, !s.cfg.OneWay, false
		s.params = cbfalgebra.Params{Seed: s.cfg.Seed}
		s.outcome.Params = s.params
		s.buildIBLT()
		return s.sendCells(s.cfg.ibltFirst())
	}
	n := s.orig.Len()
	if c := s.u.Blocks() - n; s.store != nil && s.method != Byers && c > n &&
		float64(n*s.store.BlockSize()) > float64(c)*s.cfg.filterBytesPerElement() {
		n = c
	}
	p, err := s.cfg.Params(n)
	if err != nil {
		return s.fail(err)
	}
	if err := s.build(p); err != nil {
		return s.fail(err)
	}
	s.needResponse = true
	s.needFilter = !s.cfg.OneWay
	return s.sendFilter(!s.cfg.OneWay)
}

// Step feeds one message from the peer to the session. It returns an error (and
// queues a MsgReject for the peer) when the message is malformed, unexpected, for
// another session, method or universe, or carries a non-homologous filter; the
// session is then over. A MsgReject from the peer ends the session with
// [ErrRejected].
func (s *Session) Step(m Message) error {
	if s.err != nil {
		return s.err
	}
	s.outcome.WireReceived[m.Type] += m.EncodedSize()
	defer s.addSince(&s.outcome.Compute, s.clock())
	if m.Session != s.id {
		return s.fail(fmt.Errorf("%w: message for session %d in session %d", ErrState, m.Session, s.id))
	}
	switch m.Type {
	case MsgReject:
		s.err = fmt.Errorf("%w: %s", ErrRejected, m.Reason)
		return s.err
	case MsgFilter:
		return s.onFilter(&m.Filter)
	case MsgOffer, MsgBlocks:
		return s.onResponse(&m)
	case MsgMore:
		return s.onMore(&m)
	case MsgWant:
		return s.onWant(&m)
	}
	return s.fail(fmt.Errorf("%w: message type %d", ErrMessage, uint8(m.Type)))
}

// Ready returns the messages to send to the peer, in order, and forgets them.
func (s *Session) Ready() []Message {
	out := s.out
	s.out = nil
	for i := range out {
		s.outcome.WireSent[out[i].Type] += out[i].EncodedSize()
	}
	return out
}

// Done reports whether the session is over: every expected message arrived and
// every answer is queued, or it failed (see Err).
func (s *Session) Done() bool {
	if s.err != nil {
		return true
	}
	return (s.started || s.responded) && !s.needFilter && !s.needResponse && !s.needWant
}

// clock reads the session's clock (Config.Now), or gives the zero time without one.
func (s *Session) clock() time.Time {
	if s.now == nil {
		return time.Time{}
	}
	return s.now()
}

// addSince adds the time since t0 (read by clock) to *d; nothing without a clock.
func (s *Session) addSince(d *time.Duration, t0 time.Time) {
	if s.now != nil {
		*d += s.now().Sub(t0)
	}
}

// Err returns the error that ended the session, if any.
func (s *Session) Err() error { return s.err }

// Outcome returns the session's figures so far.
func (s *Session) Outcome() Outcome { return s.outcome }

// Held returns the blocks this side holds now (those it started with and those
// received). The caller must not modify it.
func (s *Session) Held() *Set { return s.held }

// PeerFilter returns the CBF the peer sent (a copy, which the caller may
// keep and change), for a session made with Config.KeepPeerFilter that has
// received one (Complete or CCBF); nil otherwise.
func (s *Session) PeerFilter() *cbfalgebra.CBF { return s.peerCBF }

// Wanted returns the indices of the blocks the peer sent or offered that this side
// lacked, in order of arrival. Without a Blocks store these are the blocks the caller
// should now fetch from the peer.
func (s *Session) Wanted() []int { return s.wanted }

// Source returns the source blocks a Byers session decoded, or nil.
func (s *Session) Source() [][]byte { return s.source }

func (s *Session) fail(err error) error {
	if s.err == nil {
		s.err = err
		reason := err.Error()
		if len(reason) > DefaultLimits.MaxReason {
			reason = reason[:DefaultLimits.MaxReason]
		}
		s.out = append(s.out, Message{Type: MsgReject, Session: s.id, Reason: reason})
	}
	return s.err
}

// build makes this side's filter with parameters p (once per parameter set).
func (s *Session) build(p cbfalgebra.Params) error {
	if (s.mine != nil || s.mineBF != nil) && s.params == p {
		return nil
	}
	loc, err := s.u.locator(p)
	if err != nil {
		return err
	}
	s.params, s.loc = p, loc
	s.outcome.Params = p
	defer s.addSince(&s.outcome.Build, s.clock())
	if f := s.cfg.Filters; f != nil {
		if s.method == Byers {
			s.mineBF, err = f.Bloom(p)
		} else {
			s.mine, err = f.CBF(p)
		}
		return err
	}
	if s.method == Byers {
		bf, err := cbfalgebra.NewBloomFromParams(p)
		if err != nil {
			return err
		}
		for _, i := range s.origIdx {
			bf.AddLocations(loc.at(i))
		}
		s.mineBF = bf
		return nil
	}
	c, err := buildCBF(s.u, p, loc, s.orig, s.origIdx)
	if err != nil {
		return err
	}
	s.mine = c
	return nil
}

func (s *Session) sendFilter(reply bool) error {
	var data []byte
	var err error
	switch s.method {
	case Byers:
		data, err = s.mineBF.MarshalBinary()
	case Bitfield:
		data = s.orig.AppendBitfield(nil)
	case CCBF:
		if data, err = s.mine.MarshalBinary(); err == nil {
			data = CompressFilter(nil, data)
		}
	default:
		data, err = s.mine.MarshalBinary()
	}
	if err != nil {
		return s.fail(err)
	}
	s.out = append(s.out, Message{Type: MsgFilter, Session: s.id, Filter: FilterMsg{
		Method: s.method, Params: s.params, Universe: s.u.Blocks(), SetSize: s.orig.Len(),
		Reply: reply, Data: data,
	}})
	return nil
}

func (s *Session) onFilter(f *FilterMsg) error {
	if s.method == IBLT {
		return s.onCells(f)
	}
	switch {
	case !s.needFilter:
		return s.fail(fmt.Errorf("%w: filter", ErrState))
	case !s.started && s.responded:
		return s.fail(fmt.Errorf("%w: second filter", ErrState))
	case s.initiator && f.Reply:
		return s.fail(fmt.Errorf("%w: the responder asks for a reply", ErrState))
	case f.Method != s.method:
		return s.fail(fmt.Errorf("%w: peer runs %v, this side %v", ErrMethod, f.Method, s.method))
	case f.Universe != s.u.Blocks():
		return s.fail(fmt.Errorf("%w: peer has %d blocks, this side %d", ErrUniverse, f.Universe, s.u.Blocks()))
	case s.initiator && f.Params != s.params:
		return s.fail(fmt.Errorf("%w: peer answered with %v, this side sent %v",
			cbfalgebra.ErrNotHomologous, f.Params, s.params))
	case len(f.Data) > s.limits.MaxFilterBytes:
		return s.fail(fmt.Errorf("%w: filter of %d bytes > %d", ErrLimit, len(f.Data), s.limits.MaxFilterBytes))
	}
	if s.method == Bitfield {
		return s.onBitfield(f)
	}
	if err := s.cfg.accept(f.Params); err != nil {
		return s.fail(err)
	}
	// Decode the peer's filter before anything is sized by its parameters: the
	// decoder checks that the bytes present match them.
	hits := make([]uint32, 0, len(s.origIdx))
	if s.method == Byers {
		theirs, err := cbfalgebra.DecodeBloom(f.Data, s.limits.MaxFilterBytes)
		if err != nil {
			return s.fail(fmt.Errorf("reconcile: peer's filter: %w", err))
		}
		if theirs.Params() != f.Params {
			return s.fail(fmt.Errorf("%w: filter bytes say %v, message %v", cbfalgebra.ErrNotHomologous, theirs.Params(), f.Params))
		}
		if s.initiator || f.Reply { // this side's filter exists or must be sent
			if err := s.build(f.Params); err != nil {
				return s.fail(err)
			}
		} else {
			if s.loc, err = s.u.locator(f.Params); err != nil {
				return s.fail(err)
			}
			s.params, s.outcome.Params = f.Params, f.Params
		}
		for _, i := range s.origIdx {
			if !theirs.ContainsLocations(s.loc.at(i)) {
				hits = append(hits, uint32(i))
			}
		}
	} else {
		data := f.Data
		if s.method == CCBF {
			var err error
			if data, err = DecompressFilter(data, s.limits.MaxFilterBytes); err != nil {
				return s.fail(fmt.Errorf("reconcile: peer's filter: %w", err))
			}
		}
		theirs, err := cbfalgebra.DecodeCBF(data, s.limits.MaxFilterBytes)
		if err != nil {
			return s.fail(fmt.Errorf("reconcile: peer's filter: %w", err))
		}
		if theirs.Params() != f.Params {
			return s.fail(fmt.Errorf("%w: filter bytes say %v, message %v", cbfalgebra.ErrNotHomologous, theirs.Params(), f.Params))
		}
		if s.cfg.KeepPeerFilter {
			s.peerCBF = theirs.Clone()
		}
		full, err := s.u.Filter(f.Params)
		if err != nil {
			return s.fail(err)
		}
		if s.initiator || f.Reply { // this side's filter exists or must be sent anyway
			if err := s.build(f.Params); err != nil {
				return s.fail(err)
			}
			// D = CBF(S_mine) \ CBF(S_theirs), written over the peer's filter.
			if err := cbfalgebra.SubtractInto(theirs, s.mine, theirs, full); err != nil {
				return s.fail(err)
			}
		} else {
			// A one-way responder never sends its filter, so it skips building it:
			// every block x of S_mine has CBF(S_mine) >= 1 on its counters, so x is
			// in min(CBF(S_mine), CBF(U) - CBF(S_theirs)) exactly when it is in
			// CBF(U) - CBF(S_theirs) = ~CBF(S_theirs). Same answers, less work.
			if s.loc, err = s.u.locator(f.Params); err != nil {
				return s.fail(err)
			}
			s.params, s.outcome.Params = f.Params, f.Params
			if err := cbfalgebra.ComplementInto(theirs, full, theirs); err != nil {
				return s.fail(err)
			}
		}
		for _, i := range s.origIdx {
			if theirs.ContainsLocations(s.loc.at(i)) {
				hits = append(hits, uint32(i))
			}
		}
	}
	return s.answer(f.Reply, hits)
}

// answer ends this side's handling of the peer's filter: it sends its own filter
// when the peer asked for a reply, then the blocks (or the offer) of hits.
func (s *Session) answer(reply bool, hits []uint32) error {
	s.needFilter = false
	s.responded = true
	if reply {
		if err := s.sendFilter(false); err != nil {
			return err
		}
		s.needResponse = true
	}
	return s.respond(hits)
}

// respond queues the blocks (or the offer) of hits.
func (s *Session) respond(hits []uint32) error {
	m := Message{Type: MsgOffer, Session: s.id, Indices: hits}
	if s.store != nil {
		size := s.store.BlockSize()
		m.Type, m.BlockSize = MsgBlocks, size
		m.Data = make([]byte, 0, len(hits)*size)
		for _, i32 := range hits {
			i := int(i32)
			b := s.store.Block(i)
			if len(b) != size {
				return s.fail(fmt.Errorf("reconcile: store has %d bytes for block %d, want %d", len(b), i, size))
			}
			m.Data = append(m.Data, b...)
		}
	}
	s.outcome.Sent += len(hits)
	s.out = append(s.out, m)
	return nil
}

func (s *Session) onResponse(m *Message) error {
	if !s.needResponse {
		return s.fail(fmt.Errorf("%w: %v", ErrState, m.Type))
	}
	for _, i := range m.Indices { // Decode's are sorted, but Step may get hand-made messages
		if int(i) >= s.u.Blocks() {
			return s.fail(fmt.Errorf("%w: %d outside [0, %d)", ErrIndex, i, s.u.Blocks()))
		}
	}
	var arena []byte
	size := 0
	if m.Type == MsgBlocks {
		if len(m.Data) != len(m.Indices)*m.BlockSize {
			return s.fail(fmt.Errorf("%w: %d bytes for %d blocks of %d", ErrMessage, len(m.Data), len(m.Indices), m.BlockSize))
		}
		if s.store != nil {
			if m.BlockSize != s.store.BlockSize() {
				return s.fail(fmt.Errorf("%w: blocks of %d bytes, want %d", ErrMessage, m.BlockSize, s.store.BlockSize()))
			}
			size = m.BlockSize
			arena = make([]byte, 0, len(m.Data))
		}
	}
	s.wanted = slices.Grow(s.wanted, len(m.Indices))
	for j, i32 := range m.Indices {
		i := int(i32)
		s.outcome.Received++
		if !s.held.Add(i) {
			s.outcome.Redundant++
			continue
		}
		s.wanted = append(s.wanted, i)
		if arena != nil {
			start := len(arena)
			arena = append(arena, m.Data[j*size:(j+1)*size]...)
			b := arena[start:len(arena):len(arena)]
			s.store.Put(i, b)
			if err := s.collect(i, b); err != nil {
				return err
			}
		}
	}
	s.needResponse = false
	return s.decode()
}

// collect gives a coded block this side holds to the Byers collector, if any.
func (s *Session) collect(i int, b []byte) error {
	if s.coded == nil {
		return nil
	}
	_, ready, err := s.coded.Add(i, b)
	if err != nil {
		return s.fail(fmt.Errorf("reconcile: byers: %w", err))
	}
	s.decodable = s.decodable || ready
	return nil
}

// decode erasure-decodes the source once the collector holds kk distinct coded
// blocks (timed as DecodeTime); a decode that fails ends the session.
func (s *Session) decode() error {
	if !s.decodable {
		return nil
	}
	s.decodable = false
	defer s.addSince(&s.outcome.DecodeTime, s.clock())
	src, err := s.coded.Decode(context.Background(), 0)
	if err != nil {
		return s.fail(fmt.Errorf("reconcile: byers: %w", err))
	}
	s.source = src
	s.outcome.Decoded = true
	return nil
}
