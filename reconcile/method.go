package reconcile

import (
	"fmt"
	"strings"
)

// Method names a reconciliation protocol. Every method runs behind the same [Session]
// API; they differ in what the first message carries and in what they guarantee:
//
//	name      what A sends first                 exact  traffic grows with
//	complete  CBF(S_A), r*m bits                 no*    the set (m ~ 8n)
//	byers     Bloom filter of coded blocks, m    no     the set; misses blocks
//	bitfield  one bit per block of the file      yes    the file (u/8 bytes)
//	iblt      rateless IBLT coded cells          yes    the difference (~1.4 cells each)
//	ccbf      CBF(S_A), entropy coded            no*    the set (~0.4 r*m bits)
//
// (*) complete and ccbf never miss a block but may send a few redundant ones.
type Method uint8

const (
	// Complete is complete set reconciliation by CBF subtraction (paper §7): every
	// block of S_B \ S_A reaches A, with a few redundant blocks of S_A ∩ S_B.
	Complete Method = 1
	// Byers is the informed-content-delivery baseline: a plain Bloom filter of the
	// coded blocks A holds; its false positives make B miss blocks, which the
	// Reed–Solomon code of the file makes up for.
	Byers Method = 2
	// Bitfield is BitTorrent's way: A sends one bit per block of the file (ceil(u/8)
	// bytes) and B answers exactly S_B \ S_A: no block missed, none redundant.
	Bitfield Method = 3
	// IBLT is rateless invertible Bloom lookup table reconciliation (Yang, Gilad,
	// Alizadeh, SIGCOMM 2024): A streams coded cells of S_A in batches until B has
	// peeled the whole symmetric difference out of them, then B answers exactly
	// S_B \ S_A. Traffic grows with the difference d (about 1.35–1.5 cells per
	// element for large d, 9 bytes a cell), not with the set; each extra batch
	// costs a round trip. A decode that fails is detected (checksummed cells,
	// membership checks), never answered with a wrong set.
	IBLT Method = 4
	// CCBF is [Complete] with the counting Bloom filters entropy coded on the wire
	// (Huffman, klauspost/compress/huff0): at the optimal load most counters are 0
	// or 1, and the filter shrinks to about 42 % of r*m bits. Same answers as
	// Complete; both sides must run CCBF.
	CCBF Method = 5
)

// Methods lists the paper's two methods, the defaults of the paper's experiments
// (table3, sim table4 and swarm). [AllMethods] lists every method.
var Methods = []Method{Complete, Byers}

// AllMethods lists every method this version implements, in wire-tag order.
var AllMethods = []Method{Complete, Byers, Bitfield, IBLT, CCBF}

// String returns the method's name: "complete", "byers", "bitfield", "iblt" or
// "ccbf".
func (m Method) String() string {
	switch m {
	case Complete:
		return "complete"
	case Byers:
		return "byers"
	case Bitfield:
		return "bitfield"
	case IBLT:
		return "iblt"
	case CCBF:
		return "ccbf"
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// Valid reports whether this version implements the method.
func (m Method) Valid() bool { return m >= Complete && m <= CCBF }

// Exact reports whether the method delivers exactly S_B \ S_A: no block missed and
// none redundant (Bitfield and IBLT).
func (m Method) Exact() bool { return m == Bitfield || m == IBLT }

// usesCBF reports whether the method exchanges counting Bloom filters.
func (m Method) usesCBF() bool { return m == Complete || m == CCBF }

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (m Method) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrMethod, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Method) UnmarshalText(b []byte) error {
	v, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMethod parses a method name (case-insensitive): complete, byers, bitfield,
// iblt or ccbf.
func ParseMethod(s string) (Method, error) {
	for _, m := range AllMethods {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want complete, byers, bitfield, iblt or ccbf)", ErrMethod, s)
}
