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

// FuzzMidSession runs a real exchange of every method part way (steps turns, two-way
// or not) and then feeds one arbitrary message to either side, in the states the
// one-message fuzzers never reach (an IBLT responder holding cells, an initiator
// waiting for MsgWant): errors are fine; panics and unencodable answers are not.
func FuzzMidSession(f *testing.F) {
	uv, _ := NewUniverse(300)
	a, _ := SetOf(300, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233)
	b, _ := SetOf(300, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 299)
	for _, m := range sampleMessages(f) {
		w, _ := m.MarshalBinary()
		f.Add(uint8(0), uint8(1), w)
		f.Add(uint8(IBLT), uint8(3), w)
	}
	lim := Limits{MaxMessage: 1 << 16, MaxFilterBytes: 1 << 14}
	f.Fuzz(func(t *testing.T, method, turns uint8, wire []byte) {
		m, err := Decode(wire, lim)
		if err != nil {
			return
		}
		cfg := Config{Method: AllMethods[int(method)%len(AllMethods)], OneWay: turns&0x80 != 0, IBLTCells: 2, Limits: lim}
		A, _ := NewSession(m.Session, cfg, uv, a, NewMemBlocks(300, 4))
		B, _ := NewSession(m.Session, cfg, uv, b, nil)
		if err := A.Start(); err != nil {
			t.Fatal(err)
		}
		sides := [2]*Session{A, B}
		for turn := range int(turns & 0x0f) { // deliver turn by turn, through the codec
			from, to := sides[turn%2], sides[(turn+1)%2]
			for _, out := range from.Ready() {
				w, err := out.MarshalBinary()
				if err != nil {
					t.Fatalf("unencodable %v: %v", out.Type, err)
				}
				got, err := Decode(w, lim)
				if err != nil {
					t.Fatalf("own message does not decode: %v", err)
				}
				_ = to.Step(got)
			}
		}
		target := sides[int(turns>>4)%2]
		target.Ready()
		_ = target.Step(m)
		for _, out := range target.Ready() {
			if _, err := out.MarshalBinary(); err != nil {
				t.Fatalf("session emitted an unencodable %v: %v", out.Type, err)
			}
		}
	})
}
