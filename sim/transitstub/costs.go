package transitstub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// FilterConfig are the filter and code parameters of the reconciliation model
// (paper §8: m = 32768, k = 6, r = 4, RS(8191, kk)).
type FilterConfig struct {
	// M is the number of filter counters (bits of the Byers Bloom filter).
	M int
	// K is the number of hash functions.
	K int
	// R is the CBF counter width in bits.
	R int
	// Hash is the hash family of the filters.
	Hash cbfalgebra.HashFamily
	// NN is the number of coded blocks of the Byers Reed–Solomon code.
	NN int
	// BlockBytes is the payload of one block (or coded block) on the wire and in
	// the Reed–Solomon code; the Leopard GF(2^16) code (nn > 256) needs a multiple
	// of 64.
	BlockBytes int
}

// PaperFilter returns the paper's parameters: m = 32768, k = 6, r = 4, RS(8191, kk),
// with 64-byte blocks (the paper's blocks are 32-bit integers; 64 bytes is the
// smallest block the Leopard code behind RS(8191, kk) accepts, and both methods
// carry the same blocks).
func PaperFilter() FilterConfig {
	return FilterConfig{M: 32768, K: 6, R: 4, NN: 8191, BlockBytes: 64}
}

// Validate checks the parameters against what the filter and code packages accept.
func (f FilterConfig) Validate() error {
	if _, err := cbfalgebra.New(f.M, f.K, cbfalgebra.WithCounterBits(f.R), cbfalgebra.WithHash(f.Hash)); err != nil {
		return fmt.Errorf("%w: filter: %w", ErrParams, err)
	}
	if f.NN < 1 || f.NN > erasure.MaxBlocks || f.BlockBytes < 1 {
		return fmt.Errorf("%w: need 1 <= nn <= %d and positive block sizes", ErrParams, erasure.MaxBlocks)
	}
	return nil
}

func (f FilterConfig) cbfParams() cbfalgebra.Params {
	return cbfalgebra.Params{M: f.M, K: f.K, R: f.R, Hash: f.Hash}
}

// locTable returns the k addresses of every block index in [0, n), k per block.
func (f FilterConfig) locTable(n int) []uint32 {
	p := f.cbfParams()
	locs := make([]uint32, 0, n*f.K)
	var key [4]byte
	for i := range n {
		locs = p.Locations(locs, reconcile.BlockKey(key[:0], i))
	}
	return locs
}

// Costs are the compute costs of the reconciliation model, measured by running the
// real code of packages cbfalgebra and erasure on this machine (Calibrate) or set
// by hand for reproducible runs.
type Costs struct {
	// CBFDecodeMS is B's decoding of A's CBF from the wire.
	CBFDecodeMS float64 `json:"cbf_decode_ms"`
	// SubtractMS is one CBF(S_B) \ CBF(S_A) with CBF(U).
	SubtractMS float64 `json:"subtract_ms"`
	// CBFQueryUS is one block queried against the difference filter (hashing included).
	CBFQueryUS float64 `json:"cbf_query_us"`
	// CBFInsertUS is one block inserted into a CBF (A updating its filter).
	CBFInsertUS float64 `json:"cbf_insert_us"`
	// BloomDecodeMS is B's decoding of A's Bloom filter.
	BloomDecodeMS float64 `json:"bloom_decode_ms"`
	// BloomQueryUS is one coded block queried against A's Bloom filter.
	BloomQueryUS float64 `json:"bloom_query_us"`
	// DecodeMS is the Reed–Solomon decoding of RS(NN, kk) by kk; entries missing
	// when a run needs them are measured then (MeasureDecode).
	DecodeMS map[int]float64 `json:"decode_ms"`
	// EncodeMS is re-encoding all NN coded blocks after a decode (swarm), by kk.
	EncodeMS map[int]float64 `json:"encode_ms"`

	mu sync.Mutex
}

// Clone returns a copy of the costs with their own maps.
func (c *Costs) Clone() *Costs {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Costs{
		CBFDecodeMS: c.CBFDecodeMS, SubtractMS: c.SubtractMS, CBFQueryUS: c.CBFQueryUS,
		CBFInsertUS: c.CBFInsertUS, BloomDecodeMS: c.BloomDecodeMS, BloomQueryUS: c.BloomQueryUS,
		DecodeMS: cloneMap(c.DecodeMS), EncodeMS: cloneMap(c.EncodeMS),
	}
}

func cloneMap(m map[int]float64) map[int]float64 {
	out := make(map[int]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// completeMS is B's compute for a complete reconciliation over setB blocks, plus
// A's insertion of the newBlocks it receives.
func (c *Costs) completeMS(setB, newBlocks int) float64 {
	return c.CBFDecodeMS + c.SubtractMS + float64(setB)*c.CBFQueryUS/1000 + float64(newBlocks)*c.CBFInsertUS/1000
}

// byersMS is B's compute for a Byers reconciliation over setB coded blocks.
func (c *Costs) byersMS(setB int) float64 {
	return c.BloomDecodeMS + float64(setB)*c.BloomQueryUS/1000
}

// medianOf runs f reps times and returns the median duration in ms.
func medianOf(reps int, f func()) float64 {
	ts := make([]float64, reps)
	for i := range ts {
		t0 := time.Now()
		f()
		ts[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
	}
	slices.Sort(ts)
	return ts[len(ts)/2]
}

// Calibrate measures the per-filter and per-block costs by running the real
// filter code on sets of n blocks in a universe of u blocks (the median of reps
// runs each). Decode costs are left to MeasureDecode.
func Calibrate(f FilterConfig, n, u, reps int, seed uint64) (*Costs, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if n < 1 || u < n || reps < 1 {
		return nil, fmt.Errorf("%w: calibration needs 1 <= n <= u and reps >= 1", ErrParams)
	}
	rng := rand.New(rand.NewPCG(seed, 0x63616c69)) // "cali"
	p := f.cbfParams()
	locs := f.locTable(u)
	at := func(i int) []uint32 { return locs[i*f.K : (i+1)*f.K] }
	perm := rng.Perm(u)
	a, b := perm[:n], perm[u-n:]
	build := func(set []int) *cbfalgebra.CBF {
		c, _ := cbfalgebra.NewFromParams(p)
		for _, i := range set {
			c.InsertLocations(at(i))
		}
		return c
	}
	cu, ca, cb := build(perm), build(a), build(b)
	data, err := ca.MarshalBinary()
	if err != nil {
		return nil, err
	}
	bf, err := cbfalgebra.BloomOf(ca)
	if err != nil {
		return nil, err
	}
	bdata, err := bf.MarshalBinary()
	if err != nil {
		return nil, err
	}
	c := &Costs{DecodeMS: map[int]float64{}, EncodeMS: map[int]float64{}}
	var keyBuf [4]byte
	var scratch []uint32
	c.CBFDecodeMS = medianOf(reps, func() { _, err = cbfalgebra.DecodeCBF(data, 0) })
	if err != nil {
		return nil, err
	}
	d := ca.Clone()
	c.SubtractMS = medianOf(reps, func() { err = cbfalgebra.SubtractInto(d, cb, ca, cu) })
	if err != nil {
		return nil, err
	}
	hits := 0
	c.CBFQueryUS = 1000 * medianOf(reps, func() {
		for _, i := range b {
			// Hash as a peer does when it has no address table.
			scratch = p.Locations(scratch[:0], reconcile.BlockKey(keyBuf[:0], i))
			if d.ContainsLocations(scratch) {
				hits++
			}
		}
	}) / float64(n)
	c.CBFInsertUS = 1000 * medianOf(reps, func() {
		x, _ := cbfalgebra.NewFromParams(p)
		for _, i := range a {
			scratch = p.Locations(scratch[:0], reconcile.BlockKey(keyBuf[:0], i))
			x.InsertLocations(scratch)
		}
	}) / float64(n)
	c.BloomDecodeMS = medianOf(reps, func() { _, err = cbfalgebra.DecodeBloom(bdata, 0) })
	if err != nil {
		return nil, err
	}
	c.BloomQueryUS = 1000 * medianOf(reps, func() {
		for _, i := range b {
			scratch = p.Locations(scratch[:0], reconcile.BlockKey(keyBuf[:0], i))
			if bf.ContainsLocations(scratch) {
				hits++
			}
		}
	}) / float64(n)
	_ = hits
	return c, nil
}

// MeasureDecode measures, with the real erasure code, decoding RS(f.NN, kk) from the
// coded blocks listed in have (at least kk distinct indices in [0, NN); nil means a
// random kk of them), collected and decoded by an erasure.Collector as a
// receiver does, and re-encoding all NN blocks: the median of reps runs each.
// The decoded blocks are checked against the source. Results are stored in c and
// reused for the same kk.
func (c *Costs) MeasureDecode(f FilterConfig, kk int, have []int, reps int, seed uint64) (decodeMS, encodeMS float64, err error) {
	c.mu.Lock()
	dm, ok1 := c.DecodeMS[kk]
	em, ok2 := c.EncodeMS[kk]
	c.mu.Unlock()
	if ok1 && ok2 {
		return dm, em, nil
	}
	code, err := erasure.New(kk, f.NN, f.BlockBytes)
	if err != nil {
		return 0, 0, fmt.Errorf("transitstub: RS(%d, %d): %w", f.NN, kk, err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(kk)))
	src := make([][]byte, kk)
	for i := range src {
		src[i] = make([]byte, f.BlockBytes)
		for j := range src[i] {
			src[i][j] = byte(rng.Uint32())
		}
	}
	coded, err := code.Encode(src)
	if err != nil {
		return 0, 0, err
	}
	if have == nil {
		have = rng.Perm(f.NN)[:kk]
	}
	for _, i := range have {
		if i < 0 || i >= f.NN {
			return 0, 0, fmt.Errorf("%w: coded block %d outside [0, %d)", ErrParams, i, f.NN)
		}
	}
	gens, err := erasure.NewGenerations(code, int64(kk)*int64(f.BlockBytes))
	if err != nil {
		return 0, 0, err
	}
	// Time what a receiver runs: an erasure.Collector given the blocks held,
	// then its decode of the generation they complete.
	var out [][]byte
	dm = medianOf(reps, func() {
		c := erasure.NewCollector(gens)
		ready := false
		for _, i := range have {
			_, r, aerr := c.Add(i, coded[i])
			if aerr != nil {
				err = aerr
				return
			}
			ready = ready || r
		}
		if !ready {
			err = fmt.Errorf("%w: have %d distinct blocks, need %d", erasure.ErrTooFewBlocks, c.Len(), kk)
			return
		}
		out, err = c.Decode(context.Background(), 0)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("transitstub: decoding RS(%d, %d): %w", f.NN, kk, err)
	}
	for i := range src {
		if string(out[i]) != string(src[i]) {
			return 0, 0, fmt.Errorf("transitstub: RS(%d, %d) decoded block %d wrongly", f.NN, kk, i)
		}
	}
	em = medianOf(reps, func() { _, err = code.Encode(src) })
	if err != nil {
		return 0, 0, err
	}
	c.mu.Lock()
	if c.DecodeMS == nil {
		c.DecodeMS = map[int]float64{}
	}
	if c.EncodeMS == nil {
		c.EncodeMS = map[int]float64{}
	}
	if !ok1 {
		c.DecodeMS[kk] = dm
	} else {
		dm = c.DecodeMS[kk]
	}
	if !ok2 {
		c.EncodeMS[kk] = em
	} else {
		em = c.EncodeMS[kk]
	}
	c.mu.Unlock()
	return dm, em, nil
}
