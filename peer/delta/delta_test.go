package delta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func randBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

// roundTrip rebuilds target from basis through a signature, a delta and
// Apply, and returns the delta.
func roundTrip(t testing.TB, basis, target []byte) []byte {
	t.Helper()
	sig, err := Signature(bytes.NewReader(basis), int64(len(basis)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Make(sig, target)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(d)) > MaxLen(int64(len(target))) {
		t.Fatalf("delta of %d bytes for a run of %d, over MaxLen", len(d), len(target))
	}
	got, err := Apply(bytes.NewReader(basis), int64(len(basis)), d, len(target))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, target) {
		t.Fatal("rebuilt run differs")
	}
	return d
}

// TestRoundTrip: each edit of a basis is rebuilt exactly, and a small edit
// costs a delta of about its size plus a signature block, not the run.
func TestRoundTrip(t *testing.T) {
	basis := randBytes(1, 400<<10)
	bl := BlockLen(int64(len(basis)))
	for _, c := range []struct {
		name   string
		target []byte
		maxLen int // the delta's bound
	}{
		{"same", basis, 2 << 10},
		{"insert 1 KiB", slices.Concat(basis[:200<<10], randBytes(2, 1<<10), basis[200<<10:]), 1<<10 + 2*bl + 1<<10},
		{"delete 1 KiB", slices.Concat(basis[:100<<10], basis[101<<10:]), 2*bl + 1<<10},
		{"overwrite 10 KiB", slices.Concat(basis[:50<<10], randBytes(3, 10<<10), basis[60<<10:]), 10<<10 + 2*bl + 1<<10},
		{"new bytes", randBytes(4, 300<<10), int(MaxLen(300 << 10))},
		{"empty", nil, 64},
		{"from an empty basis", randBytes(5, 5000), int(MaxLen(5000))},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := basis
			if c.name == "from an empty basis" {
				b = nil
			}
			if d := roundTrip(t, b, c.target); len(d) > c.maxLen {
				t.Fatalf("delta of %d bytes, want at most %d", len(d), c.maxLen)
			}
		})
	}
}

// TestRoundTripProperty: random edits of random bases round-trip.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 40 {
		basis := randBytes(uint64(100+i), r.IntN(200<<10))
		target := slices.Clone(basis)
		for range r.IntN(4) {
			at := r.IntN(len(target) + 1)
			del := min(r.IntN(4<<10), len(target)-at)
			target = slices.Concat(target[:at], randBytes(uint64(1000+i), r.IntN(4<<10)), target[at+del:])
		}
		roundTrip(t, basis, target)
	}
}

// TestBadSignature: signatures not of our kind are refused before librsync
// sees them (a block length it would allocate, another magic number, a
// torn entry).
func TestBadSignature(t *testing.T) {
	good, err := Signature(bytes.NewReader(randBytes(1, 10000)), 10000)
	if err != nil {
		t.Fatal(err)
	}
	set := func(off int, v uint32) []byte {
		s := slices.Clone(good)
		s[off], s[off+1], s[off+2], s[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		return s
	}
	for name, sig := range map[string][]byte{
		"empty":              nil,
		"header only, torn":  good[:11],
		"torn entry":         good[:len(good)-1],
		"block length 4 GiB": set(4, 0xffffffff),
		"block length 1":     set(4, 1),
		"strong length 32":   set(8, 32),
		"MD4 magic":          set(0, 0x72730136),
		"delta magic":        set(0, 0x72730236),
	} {
		if _, err := Make(sig, []byte("target")); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
	if _, err := Make(good[:headerLen], []byte("target")); err != nil {
		t.Errorf("the signature of no bytes: %v", err)
	}
}

// TestBadDelta: deltas that write too much or too little, copy from outside
// the basis, or are not deltas, are ErrBadDelta.
func TestBadDelta(t *testing.T) {
	basis := randBytes(1, 64<<10)
	target := slices.Concat(basis[:30<<10], []byte("edit"), basis[30<<10:])
	sig, _ := Signature(bytes.NewReader(basis), int64(len(basis)))
	d, err := Make(sig, target)
	if err != nil {
		t.Fatal(err)
	}
	copyAt := func(off, n uint32) []byte { // OP_COPY_N4_N4, then OP_END
		return []byte{0x72, 0x73, 0x02, 0x36, 0x4f, byte(off >> 24), byte(off >> 16), byte(off >> 8), byte(off), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 0}
	}
	many := []byte{0x72, 0x73, 0x02, 0x36}
	for range 10000 {
		many = append(many, copyAt(0, 1<<20)[4:13]...)
	}
	for name, c := range map[string]struct {
		delta []byte
		n     int
	}{
		"one byte short":          {d, len(target) + 1},
		"one byte over":           {d, len(target) - 1},
		"empty":                   {nil, len(target)},
		"no end":                  {d[:len(d)-1], len(target)},
		"copy past the basis":     {copyAt(60<<10, 8<<10), 8 << 10},
		"copy from beyond it":     {copyAt(1<<30, 10), 10},
		"ten thousand big copies": {many, 1 << 10},
		"a signature":             {sig, 10},
	} {
		if _, err := Apply(bytes.NewReader(basis), int64(len(basis)), c.delta, c.n); !errors.Is(err, ErrBadDelta) {
			t.Errorf("%s: %v, want ErrBadDelta", name, err)
		}
	}
}

// FuzzApply: no delta makes Apply panic, return other than n bytes, or
// read more of the basis than n bytes (and a buffer's worth).
func FuzzApply(f *testing.F) {
	basis := randBytes(1, 8<<10)
	sig, _ := Signature(bytes.NewReader(basis), int64(len(basis)))
	d, _ := Make(sig, slices.Concat(basis[:4000], []byte("x"), basis[4000:]))
	f.Add(d, uint16(len(basis)+1))
	f.Add([]byte{0x72, 0x73, 0x02, 0x36, 0x41, 0x10, 0x10}, uint16(16))
	f.Fuzz(func(t *testing.T, delta []byte, n uint16) {
		r := &countingReaderAt{r: bytes.NewReader(basis)}
		got, err := Apply(r, int64(len(basis)), delta, int(n))
		if err == nil && len(got) != int(n) {
			t.Fatalf("%d bytes, want %d", len(got), n)
		}
		if r.read > int64(n)+32<<10 {
			t.Fatalf("read %d bytes of the basis for a run of %d", r.read, n)
		}
	})
}

// FuzzMake: no signature makes Make panic or allocate what it claims.
func FuzzMake(f *testing.F) {
	sig, _ := Signature(bytes.NewReader(randBytes(1, 8<<10)), 8<<10)
	f.Add(sig)
	f.Fuzz(func(t *testing.T, sig []byte) {
		Make(sig, randBytes(2, 4<<10))
	})
}

type countingReaderAt struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

func BenchmarkMake(b *testing.B) {
	basis := randBytes(1, 400<<10)
	sig, _ := Signature(bytes.NewReader(basis), int64(len(basis)))
	for _, c := range []struct {
		name   string
		target []byte
	}{
		{"insert", slices.Concat(basis[:200<<10], randBytes(2, 1<<10), basis[200<<10:])},
		{"new", randBytes(3, 400<<10)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.target)))
			for b.Loop() {
				if _, err := Make(sig, c.target); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkApply(b *testing.B) {
	basis := randBytes(1, 400<<10)
	target := slices.Concat(basis[:200<<10], randBytes(2, 1<<10), basis[200<<10:])
	sig, _ := Signature(bytes.NewReader(basis), int64(len(basis)))
	d, _ := Make(sig, target)
	b.SetBytes(int64(len(target)))
	for b.Loop() {
		if _, err := Apply(bytes.NewReader(basis), int64(len(basis)), d, len(target)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRepeatedBlocks: a basis whose blocks repeat (one weak checksum for
// many blocks, and weak checksums that collide with different strong ones)
// still rebuilds every target.
func TestRepeatedBlocks(t *testing.T) {
	zeros := make([]byte, 64<<10)
	mixed := slices.Concat(zeros[:10000], randBytes(9, 10000), zeros[:20000], randBytes(9, 10000))
	for name, c := range map[string][2][]byte{
		"zeros from zeros":     {zeros, slices.Concat(zeros, zeros[:777])},
		"mixed from zeros":     {zeros, mixed},
		"zeros from mixed":     {mixed, zeros},
		"mixed, reordered":     {mixed, slices.Concat(mixed[30000:], mixed[:30000])},
		"shorter than a block": {mixed, mixed[:100]},
	} {
		t.Run(name, func(t *testing.T) { roundTrip(t, c[0], c[1]) })
	}
}

// FuzzRoundTrip: Make and librsync's Patch agree on any basis and target.
func FuzzRoundTrip(f *testing.F) {
	f.Add(randBytes(1, 3000), slices.Concat(randBytes(1, 3000)[:1000], []byte("x"), randBytes(1, 3000)[1000:]))
	f.Add(make([]byte, 2000), make([]byte, 1000))
	f.Fuzz(func(t *testing.T, basis, target []byte) { roundTrip(t, basis, target) })
}

// TestApplyMax: a delta rebuilds bytes of a length not known beforehand up
// to max, and past it is ErrBadDelta.
func TestApplyMax(t *testing.T) {
	basis := randBytes(1, 20000)
	target := slices.Concat(basis[:5000], []byte("more"), basis[5000:])
	sig, _ := Signature(bytes.NewReader(basis), int64(len(basis)))
	d, err := Make(sig, target)
	if err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{len(target), len(target) + 1, 1 << 20} {
		if got, err := ApplyMax(bytes.NewReader(basis), int64(len(basis)), d, max); err != nil || !bytes.Equal(got, target) {
			t.Errorf("max %d: %v", max, err)
		}
	}
	if _, err := ApplyMax(bytes.NewReader(basis), int64(len(basis)), d, len(target)-1); !errors.Is(err, ErrBadDelta) {
		t.Errorf("max one byte short: %v, want ErrBadDelta", err)
	}
}
