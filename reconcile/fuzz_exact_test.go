package reconcile

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecompressFilter: arbitrary bytes never panic the CCBF decoder, its output
// never exceeds the limit, and whatever it accepts re-encodes to the same filter.
func FuzzDecompressFilter(f *testing.F) {
	f.Add(CompressFilter(nil, nil))
	f.Add(CompressFilter(nil, make([]byte, 300)))
	f.Add(CompressFilter(nil, bytes.Repeat([]byte{0, 1, 0x10, 0x11, 0, 0, 2}, 100)))
	f.Add([]byte{10, ccbfRLE, 10, 7})
	f.Add([]byte{5, ccbfRaw, 5, 1, 2, 3, 4, 5})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, ccbfRLE, 0x80, 0x80, 4, 0})
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecompressFilter(b, limit)
		if err != nil {
			if !errors.Is(err, ErrMessage) && !errors.Is(err, ErrLimit) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%d bytes decoded past the limit", len(out))
		}
		back, err := DecompressFilter(CompressFilter(nil, out), limit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("re-encoding does not round-trip: %v", err)
		}
	})
}

// FuzzDecodeIBLTCells: arbitrary batches never panic the cell decoder, never yield
// more cells than the limit or than the bytes can hold, and re-encode no longer.
func FuzzDecodeIBLTCells(f *testing.F) {
	f.Add(appendIBLTCells(nil, 0, []ibltCell{{sum: 1, count: 3}, {}}))
	f.Add(appendIBLTCells(nil, 99, []ibltCell{{sum: 1 << 63, count: -1}}))
	f.Add([]byte{0, 0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		start, cells, err := decodeIBLTCells(b, 1000)
		if err != nil {
			if !errors.Is(err, ErrMessage) && !errors.Is(err, ErrLimit) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if len(cells) > 1000 || len(cells)*(ibltSumBytes+1) > len(b) {
			t.Fatalf("%d cells from %d bytes", len(cells), len(b))
		}
		// Varints have several encodings; the canonical one is never longer.
		if again := appendIBLTCells(nil, start, cells); len(again) > len(b) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(b), len(again))
		}
	})
}

// FuzzDecodeBitfield: arbitrary bytes never panic the bitfield decoder, and what
// it accepts re-encodes to the same bytes.
func FuzzDecodeBitfield(f *testing.F) {
	f.Add([]byte{0xff, 0x01}, uint16(9))
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0x80}, uint16(7))
	f.Fuzz(func(t *testing.T, b []byte, universe uint16) {
		s, err := DecodeBitfield(b, int(universe))
		if err != nil {
			if !errors.Is(err, ErrMessage) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if !bytes.Equal(s.AppendBitfield(nil), b) || s.Len() != len(s.Indices()) {
			t.Fatal("bitfield does not round-trip")
		}
	})
}
