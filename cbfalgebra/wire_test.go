package cbfalgebra

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"testing"
)

var (
	_ encoding.BinaryMarshaler   = (*CBF)(nil)
	_ encoding.BinaryUnmarshaler = (*CBF)(nil)
	_ encoding.BinaryAppender    = (*CBF)(nil)
	_ io.WriterTo                = (*CBF)(nil)
	_ io.ReaderFrom              = (*CBF)(nil)
	_ encoding.BinaryMarshaler   = (*BloomFilter)(nil)
	_ encoding.BinaryUnmarshaler = (*BloomFilter)(nil)
	_ io.WriterTo                = (*BloomFilter)(nil)
	_ io.ReaderFrom              = (*BloomFilter)(nil)
)

func sampleCBF(t testing.TB, p Params, n int) *CBF {
	c, err := NewFromParams(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys("wire", n) {
		c.Insert(k)
	}
	return c
}

func sameCBF(a, b *CBF) bool {
	eq, err := Equal(a, b)
	return err == nil && eq && a.Len() == b.Len()
}

func TestCBFRoundTrip(t *testing.T) {
	for _, p := range []Params{
		{M: 1, K: 1, R: 4},
		{M: 1000, K: 4, R: 4, Seed: 1<<64 - 1},
		{M: 1 << 12, K: 6, R: 8, Hash: HashSHA1},
		{M: 333, K: 2, R: 16, Seed: 7},
	} {
		c := sampleCBF(t, p, 200)
		b, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != c.EncodedSize() {
			t.Fatalf("%v: %d bytes, EncodedSize %d", p, len(b), c.EncodedSize())
		}
		d, err := DecodeCBF(b, 0)
		if err != nil || !sameCBF(c, d) || d.Params() != p {
			t.Fatalf("%v: DecodeCBF: %v", p, err)
		}
		var u CBF
		if err := u.UnmarshalBinary(b); err != nil || !sameCBF(c, &u) {
			t.Fatalf("%v: UnmarshalBinary: %v", p, err)
		}
		// Two filters back to back through WriteTo/ReadFrom.
		var buf bytes.Buffer
		n1, err := c.WriteTo(&buf)
		if err != nil || n1 != int64(len(b)) || !bytes.Equal(buf.Bytes(), b) {
			t.Fatalf("%v: WriteTo wrote %d bytes (%v), differs from MarshalBinary", p, n1, err)
		}
		c2 := c.Clone()
		c2.Insert([]byte("one more"))
		c2.WriteTo(&buf)
		var r1, r2 CBF
		if n, err := r1.ReadFrom(&buf); err != nil || n != n1 || !sameCBF(c, &r1) {
			t.Fatalf("%v: ReadFrom 1: %d %v", p, n, err)
		}
		if r, err := ReadCBF(&buf, 0); err != nil || !sameCBF(c2, r) {
			t.Fatalf("%v: ReadCBF 2: %v", p, err)
		}
		if _, err := r2.ReadFrom(&buf); !errors.Is(err, io.EOF) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: ReadFrom at end: %v", p, err)
		}
		// A decoded filter keeps working.
		d.Insert([]byte("x"))
		if !d.Contains([]byte("x")) || d.Delete([]byte("wire-3")) != nil {
			t.Fatalf("%v: decoded filter broken", p)
		}
	}
}

func TestBloomRoundTrip(t *testing.T) {
	for _, p := range []Params{{M: 1, K: 1}, {M: 8191, K: 6, Seed: 3}, {M: 1 << 15, K: 6, Hash: HashSHA1}} {
		b, err := NewBloomFromParams(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys("bl", 500) {
			b.Add(k)
		}
		enc, _ := b.MarshalBinary()
		if len(enc) != b.EncodedSize() {
			t.Fatalf("size %d vs %d", len(enc), b.EncodedSize())
		}
		d, err := DecodeBloom(enc, 0)
		if err != nil || d.Params() != b.Params() || d.Len() != b.Len() || d.FillRatio() != b.FillRatio() {
			t.Fatalf("%v: DecodeBloom: %v", p, err)
		}
		for i := 0; i < p.M; i++ {
			if d.Bit(i) != b.Bit(i) {
				t.Fatalf("bit %d differs", i)
			}
		}
		var buf bytes.Buffer
		b.WriteTo(&buf)
		var r BloomFilter
		if _, err := r.ReadFrom(&buf); err != nil || r.FillRatio() != b.FillRatio() {
			t.Fatalf("ReadFrom: %v", err)
		}
		var u BloomFilter
		if err := u.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		// A CBF encoding is not a Bloom filter and vice versa.
		c := sampleCBF(t, Params{M: 64, K: 2, R: 4}, 3)
		cb, _ := c.MarshalBinary()
		if _, err := DecodeBloom(cb, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("CBF decoded as Bloom: %v", err)
		}
		if _, err := DecodeCBF(enc, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Bloom decoded as CBF: %v", err)
		}
	}
}

// reseal recomputes the checksum after a test edits the bytes.
func reseal(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	return b
}

func TestDecodeRejects(t *testing.T) {
	c := sampleCBF(t, Params{M: 100, K: 3, R: 4}, 20) // 100 counters: padding in the last word
	good, _ := c.MarshalBinary()
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"short", good[:20], ErrCorrupt},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"trailing", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"checksum", edit(func(b []byte) []byte { b[40] ^= 1; return b }), ErrCorrupt},
		{"magic", edit(func(b []byte) []byte { b[0] = 'X'; return reseal(b) }), ErrCorrupt},
		{"version", edit(func(b []byte) []byte { b[4] = 2; return reseal(b) }), ErrCorrupt},
		{"hash", edit(func(b []byte) []byte { b[5] = 9; return reseal(b) }), ErrCorrupt},
		{"sha1 m not power of two", edit(func(b []byte) []byte { b[5] = 1; return reseal(b) }), ErrInvalidParams},
		{"r", edit(func(b []byte) []byte { b[6] = 5; return reseal(b) }), ErrInvalidParams},
		{"reserved", edit(func(b []byte) []byte { b[7] = 1; return reseal(b) }), ErrCorrupt},
		{"m zero", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 0); return reseal(b) }), ErrCorrupt},
		{"m huge", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 1<<40); return reseal(b) }), ErrCorrupt},
		{"m vs length", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 200); return reseal(b) }), ErrCorrupt},
		{"k zero", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 0); return reseal(b) }), ErrCorrupt},
		{"n huge", edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[28:], 1<<63); return reseal(b) }), ErrCorrupt},
		{"padding", edit(func(b []byte) []byte { b[len(b)-5] = 0x80; return reseal(b) }), ErrCorrupt},
		{"declared too large", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[8:], uint64(MaxM))
			return reseal(b)
		}), ErrTooLarge},
	} {
		_, err := DecodeCBF(tc.b, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: DecodeCBF error %v, want %v", tc.name, err, tc.want)
		}
		if err == nil {
			continue
		}
		// The streaming decoder agrees, except that it cannot see trailing bytes.
		if tc.name == "trailing" {
			continue
		}
		if _, err := ReadCBF(bytes.NewReader(tc.b), 0); err == nil {
			t.Errorf("%s: ReadCBF accepted bad input", tc.name)
		}
	}
	if _, err := DecodeCBF(good, len(good)-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
	if _, err := ReadCBF(bytes.NewReader(good), len(good)-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadCBF limit: %v", err)
	}
	var c2 CBF
	if err := c2.UnmarshalBinary(good[:10]); err == nil || c2.l != nil {
		t.Errorf("failed UnmarshalBinary changed the receiver")
	}
}

// TestReadFromAllocatesByBytesPresent: a header that claims 8 GiB of
// counters followed by a few bytes makes the reader fail after allocating
// little, and the limit refuses the claim before reading further.
func TestReadFromAllocatesByBytesPresent(t *testing.T) {
	hdr := make([]byte, headerLen)
	putHeader(hdr, magicCBF, Params{M: int(MaxM), K: 4, R: 16}, 0)
	in := append(hdr, make([]byte, 1000)...)
	if _, err := ReadCBF(bytes.NewReader(in), 1<<40); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated huge claim: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ReadCBF(bytes.NewReader(in), 1<<40)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("allocated %d bytes for a 1036-byte input claiming 8 GiB", got)
	}
	if _, err := ReadCBF(bytes.NewReader(in), 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("default limit: %v", err)
	}
}

func fuzzSeeds(f *testing.F, bloom bool) {
	for _, p := range []Params{{M: 1, K: 1, R: 4}, {M: 100, K: 3, R: 4}, {M: 64, K: 2, R: 8, Hash: HashSHA1}, {M: 17, K: 5, R: 16, Seed: 9}} {
		var b []byte
		if bloom {
			bf, _ := NewBloomFromParams(p)
			bf.Add([]byte("a"))
			b, _ = bf.MarshalBinary()
		} else {
			b, _ = sampleCBF(f, p, 5).MarshalBinary()
		}
		f.Add(b)
	}
	f.Add([]byte("RCBF"))
	f.Add([]byte{})
}

// FuzzDecodeCBF feeds arbitrary bytes to both CBF decoders, once as given
// and once with a valid checksum appended-in-place, so that mutations reach
// the checks behind the CRC.
func FuzzDecodeCBF(f *testing.F) {
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzCBF(t, b)
		if len(b) >= headerLen+trailerLen {
			fuzzCBF(t, reseal(append([]byte(nil), b...)))
		}
	})
}

func fuzzCBF(t *testing.T, b []byte) {
	c, err := DecodeCBF(b, 1<<20)
	r, rerr := ReadCBF(bytes.NewReader(b), 1<<20)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		return
	}
	if rerr != nil || !sameCBF(c, r) {
		t.Fatalf("ReadCBF disagrees: %v", rerr)
	}
	again, _ := c.MarshalBinary()
	if !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
	// A decoded filter is fully usable.
	c.Insert([]byte("z"))
	if !c.Contains([]byte("z")) {
		t.Fatal("decoded filter lost an insert")
	}
	if _, err := Subtract(c, c, c); err != nil {
		t.Fatal(err)
	}
	_ = c.Saturated() + c.Count([]byte("y"))
}

// FuzzDecodeBloom is FuzzDecodeCBF for Bloom filters.
func FuzzDecodeBloom(f *testing.F) {
	fuzzSeeds(f, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBloom(t, b)
		if len(b) >= headerLen+trailerLen {
			fuzzBloom(t, reseal(append([]byte(nil), b...)))
		}
	})
}

func fuzzBloom(t *testing.T, b []byte) {
	bf, err := DecodeBloom(b, 1<<20)
	r, rerr := ReadBloom(bytes.NewReader(b), 1<<20)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		return
	}
	if rerr != nil || r.FillRatio() != bf.FillRatio() {
		t.Fatalf("ReadBloom disagrees: %v", rerr)
	}
	again, _ := bf.MarshalBinary()
	if !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
	bf.Add([]byte("z"))
	if !bf.Contains([]byte("z")) {
		t.Fatal("decoded filter lost an add")
	}
}
