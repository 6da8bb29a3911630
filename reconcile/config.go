package reconcile

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
)

// DefaultBitsPerElement sizes filters when Config.M is 0: m is the smallest power of
// two with m >= 8 n (the paper's m = 32768 for n = 4000).
const DefaultBitsPerElement = 8

// Config is the per-session configuration. Both sides of a session must agree on
// Method, R, Hash and Seed (they describe the file, e.g. from its ticket); M and K
// are chosen by the side that sends a filter, from its set size, unless overridden.
type Config struct {
	// Method is the protocol; the zero value means Complete.
	Method Method
	// M overrides the number of filter counters (bits for Byers); 0 chooses the
	// smallest power of two >= BitsPerElement * n for a set of n blocks. A side with
	// M set rejects filters of any other M.
	M int
	// K overrides the number of hash functions; 0 chooses round(ln2 * m/n). A side
	// with K set rejects filters of any other K.
	K int
	// BitsPerElement sizes m when M is 0; 0 means DefaultBitsPerElement.
	BitsPerElement float64
	// R is the CBF counter width (4, 8 or 16); 0 means 4. Byers' Bloom filters
	// ignore it.
	R int
	// Hash is the hash family (default cbfalgebra.HashFast).
	Hash cbfalgebra.HashFamily
	// Seed is the hash seed (default 0).
	Seed uint64
	// OneWay makes the initiator only pull: the responder sends what the initiator
	// lacks but not its own filter. The default is the two-way exchange, after which
	// both sides can hold S_A ∪ S_B.
	OneWay bool
	// Code is the erasure code of the file for Byers: with a Blocks store, the
	// session decodes once it holds Code.K() distinct coded blocks. The universe
	// must then have Code.N() blocks.
	Code *erasure.Code
	// Filters, when set, supplies this side's own filters prebuilt (see [Filters]);
	// it must have been made for exactly the held set given to NewSession.
	Filters *Filters
	// Limits bound the filters this side accepts (MaxFilterBytes, MaxUniverse);
	// zero fields take DefaultLimits.
	Limits Limits
	// IBLTCells is the number of coded cells the initiator of an [IBLT] session
	// sends in its first batch; 0 means DefaultIBLTCells. The responder asks for
	// more (MsgMore) until it decodes, sizing each request from what it has seen.
	IBLTCells int
	// KeepPeerFilter makes a session keep a copy of the CBF the peer sent
	// (Complete and CCBF), for [Session.PeerFilter]: a peer that sums its
	// neighbours' filters (cbfalgebra.Tally) learns from it how many of them
	// hold each block. Default off (the session computes over the peer's
	// filter in place).
	KeepPeerFilter bool
	// Now is the session's clock: with it, the session times its compute
	// (Outcome.Compute, Build and DecodeTime); nil means no timing, so the
	// engine never reads the wall clock on its own. Pass time.Now to measure
	// on this machine, or a simulated clock. [Run] times sessions without one
	// by time.Now.
	Now func() time.Time
}

// DefaultIBLTCells is the first batch of an [IBLT] session: enough to decode a
// difference of about 15 blocks in one round trip, about 350 bytes for a file of
// fewer than 65536 blocks.
const DefaultIBLTCells = 32

func (c Config) ibltFirst() int {
	if c.IBLTCells > 0 {
		return c.IBLTCells
	}
	return DefaultIBLTCells
}

func (c Config) method() Method {
	if c.Method == 0 {
		return Complete
	}
	return c.Method
}

// Params returns the filter parameters for a filter sized for n elements: overrides
// from the configuration, else m = the smallest power of two >= BitsPerElement*n and
// k = round(ln2 * m/n). For Byers R is 1 (a plain Bloom filter). [Session.Start]
// passes its set size, or u - n when blocks travel in the answer (see there).
func (c Config) Params(n int) (cbfalgebra.Params, error) {
	p := cbfalgebra.Params{M: c.M, K: c.K, R: c.R, Hash: c.Hash, Seed: c.Seed}
	n = max(n, 1)
	if p.M == 0 {
		bpe := c.BitsPerElement
		if bpe == 0 {
			bpe = DefaultBitsPerElement
		}
		want := math.Ceil(bpe * float64(n))
		if !(want >= 1 && want <= float64(cbfalgebra.MaxM)) {
			return p, fmt.Errorf("%w: %g bits per element for %d blocks", cbfalgebra.ErrInvalidParams, bpe, n)
		}
		p.M = 1 << bits.Len64(uint64(want)-1)
		p.M = max(p.M, 2)
	}
	if p.K == 0 {
		p.K = cbfalgebra.OptimalK(p.M, n)
	}
	if p.R == 0 {
		p.R = cbfalgebra.DefaultCounterBits
	}
	check := p
	if c.method() == Byers {
		p.R = 1
		check.R = cbfalgebra.DefaultCounterBits
	}
	if err := check.Validate(); err != nil {
		return p, err
	}
	return p, nil
}

// filterBytesPerElement is the size of a CBF sized by Params per element it is
// sized for, before rounding m up to a power of two: r * BitsPerElement / 8.
func (c Config) filterBytesPerElement() float64 {
	r, bpe := c.R, c.BitsPerElement
	if r == 0 {
		r = cbfalgebra.DefaultCounterBits
	}
	if bpe == 0 {
		bpe = DefaultBitsPerElement
	}
	return float64(r) * bpe / 8
}

// accept checks the parameters of a peer's filter against this configuration.
func (c Config) accept(p cbfalgebra.Params) error {
	wantR := c.R
	if wantR == 0 {
		wantR = cbfalgebra.DefaultCounterBits
	}
	if c.method() == Byers {
		wantR = 1
	}
	switch {
	case p.R != wantR, p.Hash != c.Hash, p.Seed != c.Seed,
		c.M != 0 && p.M != c.M, c.K != 0 && p.K != c.K:
		return fmt.Errorf("%w: peer's %v does not match r=%d hash=%v seed=%d m=%d k=%d (0 = any)",
			cbfalgebra.ErrNotHomologous, p, wantR, c.Hash, c.Seed, c.M, c.K)
	}
	if c.K == 0 && p.K > MaxPeerK {
		// Each new (m, k) makes the universe build and cache a table of
		// u·k addresses and CBF(U): a peer must not choose k freely.
		return fmt.Errorf("%w: peer's k=%d is above %d", cbfalgebra.ErrInvalidParams, p.K, MaxPeerK)
	}
	check := p
	if check.R == 1 {
		check.R = cbfalgebra.DefaultCounterBits
	}
	return check.Validate()
}

// MaxPeerK is the largest number of hash functions a session accepts in a
// peer's filter when its own Config leaves K open. The sizing of Config.Params
// gives k = round(ln2·m/n) ≤ 11 at the default 8 bits per element (22 at 32);
// a hostile peer announcing k = 64 would make every side build and cache
// address tables 6× larger than an honest filter needs.
const MaxPeerK = 24
