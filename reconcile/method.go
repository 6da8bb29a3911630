package reconcile

import (
	"fmt"
	"strings"
)

// Method names a reconciliation protocol. Every method runs behind the same [Session]
// API; new ones (bitfields, IBLTs, compressed CBFs) are added as new values.
type Method uint8

const (
	// Complete is complete set reconciliation by CBF subtraction (paper §7): every
	// block of S_B \ S_A reaches A, with a few redundant blocks of S_A ∩ S_B.
	Complete Method = 1
	// Byers is the informed-content-delivery baseline: a plain Bloom filter of the
	// coded blocks A holds; its false positives make B miss blocks, which the
	// Reed–Solomon code of the file makes up for.
	Byers Method = 2
)

// Methods lists the methods this version implements, in wire-tag order.
var Methods = []Method{Complete, Byers}

// String returns the method's name: "complete" or "byers".
func (m Method) String() string {
	switch m {
	case Complete:
		return "complete"
	case Byers:
		return "byers"
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// Valid reports whether this version implements the method.
func (m Method) Valid() bool { return m == Complete || m == Byers }

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

// ParseMethod parses a method name (case-insensitive).
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want complete or byers)", ErrMethod, s)
}
