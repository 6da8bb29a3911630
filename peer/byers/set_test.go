package byers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/erasure"
	"github.com/reconcile-p2p/reconcile/peer/byers"
)

func TestWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		p      byers.Params
		blocks int
		want   byers.Params
	}{
		{byers.Params{}, 5, byers.Params{K: 5, N: 10}},
		{byers.Params{}, 0, byers.Params{K: 1, N: 2}},
		{byers.Params{}, 1000, byers.Params{K: 64, N: 128}},
		{byers.Params{K: 8}, 1000, byers.Params{K: 8, N: 16}},
		{byers.Params{K: 8, N: 12}, 3, byers.Params{K: 8, N: 12}},
	} {
		if got := tc.p.WithDefaults(tc.blocks); got != tc.want {
			t.Errorf("%+v.WithDefaults(%d) = %+v, want %+v", tc.p, tc.blocks, got, tc.want)
		}
	}
}

// TestEncode: every coded block is held, and the first K of a generation are
// its source blocks (the last one padded with zeros).
func TestEncode(t *testing.T) {
	m, src := newContent(t, 5000, 1024, 1)
	s, err := byers.Encode(context.Background(), m, src, byers.Params{K: 2, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	// 5 blocks in generations of 2: 3 generations of 4 coded blocks.
	if s.Count() != 12 || s.BlockSize() != 1024 || !s.Fits(m) {
		t.Fatalf("count %d, block size %d, fits %v", s.Count(), s.BlockSize(), s.Fits(m))
	}
	if held := s.Held(); len(held) != 12 || held[0] != 0 || held[11] != 11 {
		t.Fatalf("held %v", held)
	}
	for i := range m.BlockCount() {
		id := i/2*4 + i%2
		b, ok := s.Get(id)
		want := src.blocks[i]
		if !ok || len(b) != 1024 || !bytes.Equal(b[:len(want)], want) || slices.ContainsFunc(b[len(want):], func(x byte) bool { return x != 0 }) {
			t.Errorf("coded block %d is not source block %d", id, i)
		}
	}
	for _, i := range []int{-1, 12} {
		if _, ok := s.Get(i); ok || s.Has(i) {
			t.Errorf("Get(%d) holds a block", i)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	m, src := newContent(t, 5000, 1024, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := byers.Encode(ctx, m, src, byers.Params{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := byers.Encode(context.Background(), m, emptyStore(m), byers.Params{}); !errors.Is(err, chunker.ErrNotHeld) {
		t.Errorf("unreadable block: %v", err)
	}
	if _, err := byers.Encode(context.Background(), m, src, byers.Params{K: 4, N: 2}); err == nil {
		t.Error("n < k accepted")
	}
	big := bigManifest(t)
	if _, err := byers.Encode(context.Background(), big, emptyStore(big), byers.Params{}); !errors.Is(err, byers.ErrTooLarge) {
		t.Errorf("content over MaxBytes: %v", err)
	}
}

// bigManifest is the manifest of content one byte over MaxBytes.
func bigManifest(t *testing.T) *chunker.Manifest {
	t.Helper()
	const bs = chunker.MaxBlockSize
	size := int64(byers.MaxBytes + 1)
	hashes := make([][chunker.HashSize]byte, (size+bs-1)/bs)
	m, err := chunker.NewManifest([]chunker.File{{Path: "big", Size: size, Mode: 0o644}}, bs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// header returns a coded header of the given fields and n hashes.
func header(k, n, bs, size uint64, hashes int) []byte {
	b := binary.AppendUvarint(nil, k)
	b = binary.AppendUvarint(b, n)
	b = binary.AppendUvarint(b, bs)
	b = binary.AppendUvarint(b, size)
	return append(b, make([]byte, hashes*chunker.HashSize)...)
}

func TestDecodeHeader(t *testing.T) {
	m, _ := newContent(t, 5000, 1024, 1) // 5 blocks
	big := bigManifest(t)
	for _, tc := range []struct {
		name  string
		m     *chunker.Manifest
		b     []byte
		err   error
		count int
	}{
		{"k 2 n 4", m, header(2, 4, 1024, 5000, 12), nil, 12},
		{"k 4 n 4", m, header(4, 4, 1024, 5000, 8), nil, 8},
		{"k 8 n 9, one generation", m, header(8, 9, 1024, 5000, 9), nil, 9},
		{"empty", m, nil, byers.ErrMalformed, 0},
		{"truncated varints", m, header(2, 4, 1024, 5000, 0)[:3], byers.ErrMalformed, 0},
		{"varint overflow", m, bytes.Repeat([]byte{0xff}, 11), byers.ErrMalformed, 0},
		{"other block size", m, header(2, 4, 2048, 5000, 6), byers.ErrMalformed, 0},
		{"other content size", m, header(2, 4, 1024, 4999, 12), byers.ErrMalformed, 0},
		{"k 0", m, header(0, 4, 1024, 5000, 0), byers.ErrMalformed, 0},
		{"n under k", m, header(4, 2, 1024, 5000, 4), byers.ErrMalformed, 0},
		{"n over erasure.MaxBlocks", m, header(1, erasure.MaxBlocks+1, 1024, 5000, 5), byers.ErrMalformed, 0},
		{"a hash short", m, header(2, 4, 1024, 5000, 11), byers.ErrMalformed, 0},
		{"a hash too many", m, header(2, 4, 1024, 5000, 13), byers.ErrMalformed, 0},
		{"a byte too many", m, append(header(2, 4, 1024, 5000, 12), 0), byers.ErrMalformed, 0},
		{"claims 5 x 65536 blocks", m, header(1, erasure.MaxBlocks, 1024, 5000, 12), byers.ErrMalformed, 0},
		{"huge varints", m, header(1<<62, 1<<63, 1<<63, 1<<63, 0), byers.ErrMalformed, 0},
		{"content over MaxBytes", big, header(17, 34, chunker.MaxBlockSize, byers.MaxBytes+1, 34), byers.ErrTooLarge, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := byers.DecodeHeader(tc.b, tc.m)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if s.Count() != tc.count || len(s.Held()) != 0 || !bytes.Equal(s.Header(), tc.b) {
				t.Errorf("count %d (want %d), %d held, header re-encodes differently", s.Count(), tc.count, len(s.Held()))
			}
		})
	}
}

// TestDecodeHeaderBounded: a header that claims more coded blocks than it
// carries hashes for is refused without allocating for the claim.
func TestDecodeHeaderBounded(t *testing.T) {
	m, _ := newContent(t, 5000, 1024, 1)
	lie := header(1, erasure.MaxBlocks, 1024, 5000, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		if _, err := byers.DecodeHeader(lie, m); !errors.Is(err, byers.ErrMalformed) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 100<<10 {
		t.Errorf("100 lying headers allocated %d bytes", n)
	}
}

// FuzzDecodeHeader: DecodeHeader never panics and accepts only headers that
// fit the manifest, whose hashes it keeps.
func FuzzDecodeHeader(f *testing.F) {
	m, err := chunker.ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(make([]byte, 5000)), 1024)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(header(2, 4, 1024, 5000, 12))
	f.Add(header(5, 5, 1024, 5000, 5))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := byers.DecodeHeader(b, m)
		if err != nil {
			return
		}
		h := s.Header()
		n := s.Count() * chunker.HashSize
		if s.BlockSize() != 1024 || !s.Fits(m) || len(h) < n || !bytes.HasSuffix(b, h[len(h)-n:]) || len(b)-n > 4*binary.MaxVarintLen64 {
			t.Fatalf("accepted a header that does not fit: %d blocks from %d bytes", s.Count(), len(b))
		}
		again, err := byers.DecodeHeader(h, m)
		if err != nil || again.Count() != s.Count() {
			t.Fatalf("re-encoded header: %v", err)
		}
	})
}

func TestShare(t *testing.T) {
	m, src := newContent(t, 5000, 1024, 1)
	s, err := byers.Encode(context.Background(), m, src, byers.Params{K: 2, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	part, err := s.Share([]int{3, 0, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := part.Held(); !slices.Equal(got, []int{0, 3}) || part.Count() != 12 || !bytes.Equal(part.Header(), s.Header()) {
		t.Fatalf("held %v, count %d", got, part.Count())
	}
	a, _ := s.Get(3)
	b, _ := part.Get(3)
	if &a[0] != &b[0] {
		t.Error("a shared block is a copy")
	}
	// A set shared from a shared set takes its blocks from the first.
	again, err := part.Share([]int{5})
	if err != nil || !again.Has(5) || again.Has(3) {
		t.Errorf("share of a share: %v", err)
	}
	for _, held := range [][]int{{-1}, {12}} {
		if _, err := s.Share(held); err == nil {
			t.Errorf("Share(%v) accepted", held)
		}
	}
	empty, err := byers.DecodeHeader(s.Header(), m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Share([]int{0}); err == nil {
		t.Error("Share of a block not held accepted")
	}
}
