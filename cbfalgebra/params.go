package cbfalgebra

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"
)

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers test them with errors.Is.
var (
	// ErrNotHomologous is returned when filters with different m, k, r,
	// hash family or seed are combined.
	ErrNotHomologous = errors.New("cbfalgebra: filters are not homologous")
	// ErrNotMember is returned by Delete when the element's counters show
	// that it is not in the filter; the filter is left unchanged.
	ErrNotMember = errors.New("cbfalgebra: element is not a member")
	// ErrCorrupt is returned when encoded bytes are truncated, inconsistent
	// or fail the checksum.
	ErrCorrupt = errors.New("cbfalgebra: corrupt encoding")
	// ErrTooLarge is returned when an encoding declares more bytes than the
	// decoder's limit allows.
	ErrTooLarge = errors.New("cbfalgebra: encoding too large")
	// ErrInvalidParams is returned for parameters outside their domain.
	ErrInvalidParams = errors.New("cbfalgebra: invalid parameters")
)

// Limits on parameters.
const (
	// MaxM is the largest number of counters (addresses are uint32).
	MaxM int64 = 1 << 32
	// MaxK is the largest number of hash functions.
	MaxK = 64
	// DefaultCounterBits is the counter width r used unless WithCounterBits
	// says otherwise.
	DefaultCounterBits = 4
)

// HashFamily selects how an element is mapped to its k counter addresses.
// The zero value is HashFast.
type HashFamily uint8

const (
	// HashFast is the default family: seeded 128-bit XXH3 and double
	// hashing; any m.
	HashFast HashFamily = 0
	// HashSHA1 is the paper's scheme: SHA1(x)||SHA1(x||x)||... cut into
	// log2(m)-bit addresses, most significant bit first; m a power of two.
	// A non-zero seed is prefixed to every SHA-1 input as 8 big-endian
	// bytes; seed 0 reproduces the paper exactly.
	HashSHA1 HashFamily = 1
)

// ParseHashFamily returns the family named "fast" or "sha1" (case-insensitive).
func ParseHashFamily(name string) (HashFamily, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "fast":
		return HashFast, nil
	case "sha1":
		return HashSHA1, nil
	}
	return 0, fmt.Errorf("%w: unknown hash family %q (want fast or sha1)", ErrInvalidParams, name)
}

// String returns the family's name as accepted by ParseHashFamily.
func (h HashFamily) String() string {
	switch h {
	case HashFast:
		return "fast"
	case HashSHA1:
		return "sha1"
	}
	return fmt.Sprintf("HashFamily(%d)", uint8(h))
}

// Params are the parameters that make filters homologous: M counters,
// K hash functions, R bits per counter (4, 8 or 16; 1 for a BloomFilter),
// the hash family and its seed.
type Params struct {
	M    int
	K    int
	R    int
	Hash HashFamily
	Seed uint64
}

// String formats the parameters for messages, e.g. "m=65536 k=6 r=4 hash=sha1 seed=0".
func (p Params) String() string {
	return fmt.Sprintf("m=%d k=%d r=%d hash=%s seed=%d", p.M, p.K, p.R, p.Hash, p.Seed)
}

// Validate reports whether p describes a counting Bloom filter: 1 <= M <=
// MaxM, 1 <= K <= MaxK, R in {4, 8, 16}, a known hash family, and for
// HashSHA1 an M that is a power of two and at least 2.
func (p Params) Validate() error {
	if err := p.validateHashing(); err != nil {
		return err
	}
	switch p.R {
	case 4, 8, 16:
	default:
		return fmt.Errorf("%w: counter bits r=%d not in {4, 8, 16}", ErrInvalidParams, p.R)
	}
	return nil
}

// validateHashing checks everything but R.
func (p Params) validateHashing() error {
	if p.M < 1 || int64(p.M) > MaxM {
		return fmt.Errorf("%w: m=%d not in [1, %d]", ErrInvalidParams, p.M, MaxM)
	}
	if p.K < 1 || p.K > MaxK {
		return fmt.Errorf("%w: k=%d not in [1, %d]", ErrInvalidParams, p.K, MaxK)
	}
	switch p.Hash {
	case HashFast:
	case HashSHA1:
		if p.M < 2 || p.M&(p.M-1) != 0 {
			return fmt.Errorf("%w: hash sha1 needs m a power of two >= 2, got m=%d", ErrInvalidParams, p.M)
		}
	default:
		return fmt.Errorf("%w: unknown hash family %d", ErrInvalidParams, uint8(p.Hash))
	}
	return nil
}

// Homologous reports whether filters with parameters p and q can be
// combined: same m, k, r, hash family and seed.
func (p Params) Homologous(q Params) bool { return p == q }

// Locations appends the K counter addresses of key to dst and returns the
// extended slice. It does not allocate when cap(dst)-len(dst) >= K. The
// parameters must be valid (see Validate); for invalid ones the result is
// unspecified but Locations does not panic.
func (p Params) Locations(dst []uint32, key []byte) []uint32 {
	if p.M < 1 || p.K < 1 || p.K > MaxK {
		return dst
	}
	if p.Hash == HashSHA1 && p.M >= 2 && p.M&(p.M-1) == 0 {
		return sha1Locations(dst, key, p.M, p.K, p.Seed)
	}
	return fastLocations(dst, key, p.M, p.K, p.Seed)
}

func fastLocations(dst []uint32, key []byte, m, k int, seed uint64) []uint32 {
	h := xxh3.Hash128Seed(key, seed)
	a, b := h.Lo, h.Hi|1
	for j := 0; j < k; j++ {
		hi, _ := bits.Mul64(a, uint64(m))
		dst = append(dst, uint32(hi))
		a += b
	}
	return dst
}

// sha1Scratch is the reusable message and digest buffer of one SHA-1
// address computation.
type sha1Scratch struct{ msg, digests []byte }

var sha1Pool = sync.Pool{New: func() any { return new(sha1Scratch) }}

func sha1Locations(dst []uint32, key []byte, m, k int, seed uint64) []uint32 {
	a := bits.TrailingZeros64(uint64(m)) // A = log2 m, 1..32
	t := (k*a + 8*sha1.Size - 1) / (8 * sha1.Size)
	st := sha1Pool.Get().(*sha1Scratch)
	msg, out := st.msg[:0], st.digests[:0]
	if seed != 0 {
		msg = binary.BigEndian.AppendUint64(msg, seed)
	}
	for q := 1; q <= t; q++ {
		msg = append(msg, key...) // seed? || key repeated q times
		d := sha1.Sum(msg)
		out = append(out, d[:]...)
	}
	out = append(out, 0, 0, 0, 0, 0, 0, 0, 0) // room for the last 8-byte window
	for j := 0; j < k; j++ {
		bit := j * a
		w := binary.BigEndian.Uint64(out[bit>>3:])
		dst = append(dst, uint32((w<<(bit&7))>>(64-a)))
	}
	st.msg, st.digests = msg[:0], out[:0]
	sha1Pool.Put(st)
	return dst
}

// OptimalK returns the number of hash functions minimising the false-positive
// rate of n elements in m counters, round(ln2 * m/n), at least 1 and at most
// MaxK; n < 1 is treated as n = 1.
func OptimalK(m, n int) int {
	if n < 1 {
		n = 1
	}
	if m < 1 {
		return 1
	}
	k := int(math.Round(math.Ln2 * float64(m) / float64(n)))
	return min(max(k, 1), MaxK)
}

// Option adjusts the parameters of a filter under construction.
type Option func(*Params) error

// WithCounterBits sets the counter width r: 4 (the default), 8 or 16.
// Bloom filters ignore it.
func WithCounterBits(r int) Option {
	return func(p *Params) error {
		switch r {
		case 4, 8, 16:
			p.R = r
			return nil
		}
		return fmt.Errorf("%w: counter bits r=%d not in {4, 8, 16}", ErrInvalidParams, r)
	}
}

// WithHash sets the hash family (default HashFast).
func WithHash(h HashFamily) Option {
	return func(p *Params) error {
		if h != HashFast && h != HashSHA1 {
			return fmt.Errorf("%w: unknown hash family %d", ErrInvalidParams, uint8(h))
		}
		p.Hash = h
		return nil
	}
}

// WithSeed sets the hash seed (default 0). Filters with different seeds are
// not homologous.
func WithSeed(seed uint64) Option {
	return func(p *Params) error {
		p.Seed = seed
		return nil
	}
}

func buildParams(m, k int, opts []Option) (Params, error) {
	p := Params{M: m, K: k, R: DefaultCounterBits, Hash: HashFast}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&p); err != nil {
			return Params{}, err
		}
	}
	return p, nil
}

// EstimateParams returns m and k for n elements at false-positive rate fp:
// m is the smallest power of two with m >= -n ln(fp) / (ln 2)^2, and
// k = OptimalK(m, n).
func EstimateParams(n int, fp float64) (m, k int, err error) {
	if n < 1 {
		return 0, 0, fmt.Errorf("%w: expected elements n=%d, want >= 1", ErrInvalidParams, n)
	}
	if !(fp > 0 && fp < 1) {
		return 0, 0, fmt.Errorf("%w: target fp=%v not in (0, 1)", ErrInvalidParams, fp)
	}
	need := math.Ceil(-float64(n) * math.Log(fp) / (math.Ln2 * math.Ln2))
	if need > float64(MaxM) {
		return 0, 0, fmt.Errorf("%w: n=%d at fp=%v needs %.0f counters, more than %d", ErrInvalidParams, n, fp, need, MaxM)
	}
	m = 2
	for float64(m) < need {
		m <<= 1
	}
	return m, OptimalK(m, n), nil
}
