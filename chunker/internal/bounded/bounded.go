// Package bounded decodes msgpack held in memory without trusting the lengths
// and counts it claims: every str, bin and array header is checked against the
// bytes left (and a caller's limit) before anything is allocated, so an input
// of n bytes never makes the decoder allocate much more than n bytes. Package
// chunker reads manifests with it.
//
// Every error of a Decoder is an *Error naming what was being read, for the
// caller to wrap in its own (chunker: ErrCorrupt).
package bounded

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Error is an error of a Decoder, or one that its caller found in what it read
// (Bad): what was being read, and the msgpack error if there is one.
type Error struct {
	What string // as the caller named it, such as "file path: length 5000"
	Err  error  // the msgpack error, or nil
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.What
	}
	return e.What + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Bad returns an *Error of what, with err (which may be nil).
func Bad(what string, err error) error { return &Error{What: what, Err: err} }

// Decoder reads the msgpack values of a byte slice one after the other.
type Decoder struct {
	r *bytes.Reader
	d *msgpack.Decoder
}

// NewDecoder returns a Decoder of b.
func NewDecoder(b []byte) *Decoder {
	r := bytes.NewReader(b)
	return &Decoder{r: r, d: msgpack.NewDecoder(r)}
}

// Len returns the number of bytes left.
func (md *Decoder) Len() int { return md.r.Len() }

// Bytes reads a str or bin of at most limit bytes, its claimed length checked
// against the bytes left before it is allocated.
func (md *Decoder) Bytes(what string, limit int) ([]byte, error) {
	n, err := md.d.DecodeBytesLen()
	if err != nil {
		return nil, Bad(what, err)
	}
	if n < 0 || n > md.r.Len() || n > limit {
		return nil, Bad(fmt.Sprintf("%s: length %d", what, n), nil)
	}
	buf := make([]byte, n)
	if err := md.d.ReadFull(buf); err != nil {
		return nil, Bad(what, err)
	}
	return buf, nil
}

// Uint reads an unsigned integer of at most max.
func (md *Decoder) Uint(what string, max uint64) (uint64, error) {
	v, err := md.d.DecodeUint64()
	if err != nil {
		return 0, Bad(what, err)
	}
	if v > max {
		return 0, Bad(fmt.Sprintf("%s %d out of range", what, v), nil)
	}
	return v, nil
}

// Array reads an array header of a count that, at minSize bytes per element,
// the bytes left can hold.
func (md *Decoder) Array(what string, minSize int) (int, error) {
	n, err := md.d.DecodeArrayLen()
	if err != nil {
		return 0, Bad(what, err)
	}
	if n < 0 || n > md.r.Len()/minSize {
		return 0, Bad(fmt.Sprintf("%s count %d", what, n), nil)
	}
	return n, nil
}

// ArrayLen reads an array header as it is, for an array of a fixed length
// that the caller checks.
func (md *Decoder) ArrayLen() (int, error) { return md.d.DecodeArrayLen() }
