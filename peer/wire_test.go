package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	frames := [][]byte{{}, {1}, bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, 200<<10)}
	for _, f := range frames {
		if err := writeFrame(bw, f[:len(f)/2], f[len(f)/2:]); err != nil {
			t.Fatal(err)
		}
	}
	bw.Flush()
	fr := newFrameReader(&buf, 1<<20)
	for i, want := range frames {
		got, err := fr.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameLimits(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"over the limit", []byte{0x80, 0x80, 0x04}, 1 << 10, ErrFrameTooLarge},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1 << 20, ErrFrameTooLarge},
		{"varint overflow", bytes.Repeat([]byte{0xff}, 11), 1 << 20, ErrMalformed},
		{"truncated body", []byte{5, 1, 2}, 1 << 10, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0x80}, 1 << 10, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newFrameReader(bytes.NewReader(tc.input), tc.max).next()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// errReader returns its bytes, then err.
type errReader struct {
	b   []byte
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestFrameStreamErrors: an error of the stream (a reset, a deadline) while a
// frame's length is read comes back as it is, not as ErrMalformed: the peer is
// slow or gone, not misbehaving, and must not be banned for it.
func TestFrameStreamErrors(t *testing.T) {
	for _, prefix := range [][]byte{nil, {0x80}, {0x80, 0x80}} {
		for _, cause := range []error{errors.New("stream reset"), context.DeadlineExceeded} {
			_, err := newFrameReader(&errReader{b: prefix, err: cause}, 1<<10).next()
			if !errors.Is(err, cause) || errors.Is(err, ErrMalformed) {
				t.Errorf("after %x: %v, want %v and not ErrMalformed", prefix, err, cause)
			}
		}
	}
}

// TestReadLength: readLength agrees with binary.ReadUvarint on every length.
func TestReadLength(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		v := r.Uint64() >> (r.IntN(64))
		if i < 64 {
			v = 1 << i
		}
		b := binary.AppendUvarint(nil, v)
		got, err := readLength(bytes.NewReader(b))
		if err != nil || got != v {
			t.Fatalf("readLength(%x) = %d, %v, want %d", b, got, err, v)
		}
	}
	// The 10th byte may carry only the top bit of a uint64.
	b := append(bytes.Repeat([]byte{0xff}, 9), 0x02)
	if _, err := readLength(bytes.NewReader(b)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("overflowing 10-byte length: %v", err)
	}
	if _, err := binary.ReadUvarint(bytes.NewReader(b)); err == nil {
		t.Fatal("binary.ReadUvarint accepts it")
	}
}

// TestFrameAllocBounded: a frame that claims more than it carries allocates
// about what arrived, not what it claims.
func TestFrameAllocBounded(t *testing.T) {
	in := append([]byte{0x80, 0x80, 0x80, 0x20}, make([]byte, 100)...) // claims 64 MiB
	before := memStats()
	for range 10 {
		fr := newFrameReader(bytes.NewReader(in), 1<<30)
		if _, err := fr.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated frame: %v", err)
		}
	}
	if grew := memStats() - before; grew > 10<<20 {
		t.Fatalf("10 frames of 100 bytes claiming 64 MiB allocated %d bytes", grew)
	}
}

func TestHello(t *testing.T) {
	for _, h := range []hello{{Root: []byte{1}}, {Root: bytes.Repeat([]byte{2}, 32), Coded: true}, {Root: bytes.Repeat([]byte{3}, maxRootLen)}} {
		got, err := decodeHello(h.append(nil))
		if err != nil || !bytes.Equal(got.Root, h.Root) || got.Coded != h.Coded {
			t.Fatalf("%+v: got %+v, %v", h, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {msgHello}, {msgHello, 0, 0}, {msgHello, 2, 1, 0}, {msgHello, 1, 1, 0x80}, {msgWant, 1, 1, 0}, {msgHello, 1, 1, 0, 0}} {
		if _, err := decodeHello(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("decodeHello(%v): %v", bad, err)
		}
	}
}

func TestWant(t *testing.T) {
	idx := []int{0, 1, 127, 128, 1 << 20}
	got, err := decodeWant(nil, appendWant(nil, idx), 16, 1<<21)
	if err != nil || len(got) != len(idx) {
		t.Fatalf("got %v, %v", got, err)
	}
	for i := range idx {
		if got[i] != idx[i] {
			t.Fatalf("got %v, want %v", got, idx)
		}
	}
	for name, tc := range map[string]struct {
		b          []byte
		max, limit int
	}{
		"too many":        {appendWant(nil, make([]int, 17)), 16, 10},
		"out of range":    {appendWant(nil, []int{10}), 16, 10},
		"count > bytes":   {[]byte{msgWant, 5, 1}, 16, 10},
		"trailing bytes":  {append(appendWant(nil, []int{1}), 0), 16, 10},
		"truncated index": {[]byte{msgWant, 1, 0x80}, 16, 10},
		"wrong type":      {[]byte{msgBlock, 0}, 16, 10},
	} {
		if _, err := decodeWant(nil, tc.b, tc.max, tc.limit); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBlockFrames(t *testing.T) {
	data := []byte("payload")
	i, got, ok, err := decodeBlock(append(appendBlockHeader(nil, 300), data...), 301)
	if err != nil || !ok || i != 300 || !bytes.Equal(got, data) {
		t.Fatalf("block: %d %q %v %v", i, got, ok, err)
	}
	i, got, ok, err = decodeBlock(appendMissing(nil, 5), 6)
	if err != nil || ok || i != 5 || got != nil {
		t.Fatalf("missing: %d %q %v %v", i, got, ok, err)
	}
	if _, _, _, err := decodeBlock(appendBlockHeader(nil, 6), 6); !errors.Is(err, ErrMalformed) {
		t.Errorf("index out of range: %v", err)
	}
	if _, _, _, err := decodeBlock(appendError(nil, unknownRootText), 6); !errors.Is(err, ErrUnknownRoot) {
		t.Errorf("error frame: %v", err)
	}
	if _, _, _, err := decodeBlock(append(appendMissing(nil, 1), 0), 6); !errors.Is(err, ErrMalformed) {
		t.Errorf("bytes after missing: %v", err)
	}
}

func TestErrorFrames(t *testing.T) {
	err := decodeError(appendError(nil, "disk on fire\x1b[2J"+strings.Repeat("x", 1000)))
	if !errors.Is(err, ErrRemote) || strings.ContainsAny(err.Error(), "\x1b\n") || len(err.Error()) > maxErrorText+64 {
		t.Fatalf("%q", err)
	}
}

func testAddrInfos(t testing.TB, n int) []lpeer.AddrInfo {
	var out []lpeer.AddrInfo
	for i := range n {
		p := newKeyID(t)
		a := ma.StringCast("/ip4/127.0.0.1/tcp/" + string(rune('1'+i%9)) + "000")
		b := ma.StringCast("/ip6/::1/udp/4001/quic-v1")
		out = append(out, lpeer.AddrInfo{ID: p, Addrs: []ma.Multiaddr{a, b}})
	}
	return out
}

func TestPeersRoundTrip(t *testing.T) {
	infos := testAddrInfos(t, 3)
	got, err := decodePeers(appendPeers(nil, infos))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d peers", len(got))
	}
	for i := range infos {
		if got[i].ID != infos[i].ID || len(got[i].Addrs) != 2 || !got[i].Addrs[0].Equal(infos[i].Addrs[0]) {
			t.Fatalf("peer %d: %v, want %v", i, got[i], infos[i])
		}
	}
	// Every prefix of a valid message fails cleanly.
	b := appendPeers(nil, infos)
	for n := 0; n < len(b); n++ {
		if _, err := decodePeers(b[:n]); err == nil {
			t.Fatalf("prefix of %d bytes decoded", n)
		}
	}
}

// FuzzFrameReader: any byte stream gives frames within the limit or an error,
// never a panic.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := newFrameReader(bytes.NewReader(b), 1<<10)
		for range 64 {
			got, err := fr.next()
			if err != nil {
				return
			}
			if len(got) > 1<<10 {
				t.Fatalf("frame of %d bytes over the limit", len(got))
			}
		}
	})
}

// FuzzDecoders runs every message decoder on arbitrary input.
func FuzzDecoders(f *testing.F) {
	f.Add(hello{Root: []byte{1, 2}}.append(nil))
	f.Add(appendWant(nil, []int{1, 2, 3}))
	f.Add(append(appendBlockHeader(nil, 3), 1, 2))
	f.Add(appendMissing(nil, 9))
	f.Add(appendError(nil, "x"))
	f.Add(appendPeers(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := decodeHello(b); err == nil && !bytes.Equal(h.append(nil), b) {
			t.Fatalf("hello does not round-trip")
		}
		if idx, err := decodeWant(nil, b, 64, 1000); err == nil {
			if len(idx) > 64 {
				t.Fatalf("want %v", idx)
			}
			for _, i := range idx {
				if i < 0 || i >= 1000 {
					t.Fatalf("index %d out of range", i)
				}
			}
		}
		if i, data, _, err := decodeBlock(b, 1000); err == nil && (i < 0 || i >= 1000 || len(data) > len(b)) {
			t.Fatalf("block %d", i)
		}
		if infos, err := decodePeers(b); err == nil {
			if len(infos) > maxPeersListed {
				t.Fatalf("%d peers", len(infos))
			}
			for _, ai := range infos {
				if len(ai.Addrs) > maxAddrsListed {
					t.Fatalf("%d addrs", len(ai.Addrs))
				}
			}
		}
		_ = decodeError(b)
		_, _ = decodeTyped(b, msgManifest)
	})
}

// FuzzTicket: ParseTicket never panics, and what it accepts re-encodes to a
// ticket that parses to the same content.
func FuzzTicket(f *testing.F) {
	var tk Ticket
	tk.Root[0] = 1
	tk.Peers = testAddrInfos(f, 1)
	f.Add(tk.String())
	f.Add("b")
	f.Add("zzzz")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTicket(s)
		if err != nil {
			return
		}
		again, err := ParseTicket(got.String())
		if err != nil || again.Root != got.Root || len(again.Peers) != len(got.Peers) {
			t.Fatalf("re-encoded ticket: %v", err)
		}
	})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// FuzzCodedHeader: the Byers coded header decoder never panics and accepts
// only headers that fit the manifest.
func FuzzCodedHeader(f *testing.F) {
	m, err := chunker.ChunkReader(context.Background(), "f", 0o644, bytes.NewReader(make([]byte, 5000)), 1024)
	if err != nil {
		f.Fatal(err)
	}
	good := binary.AppendUvarint(nil, 2)
	good = binary.AppendUvarint(good, 4)
	good = binary.AppendUvarint(good, 1024)
	good = binary.AppendUvarint(good, 5000)
	f.Add(append(good, make([]byte, 12*chunker.HashSize)...))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		cb, err := decodeCodedHeader(b, m)
		if err != nil {
			return
		}
		if len(cb.hashes) != cb.count()*chunker.HashSize || cb.gens.Code().BlockSize() != 1024 {
			t.Fatalf("accepted a header that does not fit: %d hashes for %d blocks", len(cb.hashes)/chunker.HashSize, cb.count())
		}
	})
}
