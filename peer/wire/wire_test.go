package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// newKeyID is a peer id of a key drawn from i.
func newKeyID(t testing.TB, i int) lpeer.ID {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = byte(i + 1)
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	id, err := lpeer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func memStats() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	frames := [][]byte{{}, {1}, bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, 200<<10)}
	for _, f := range frames {
		if err := WriteFrame(bw, f[:len(f)/2], f[len(f)/2:]); err != nil {
			t.Fatal(err)
		}
	}
	bw.Flush()
	fr := NewReader(&buf)
	for i, want := range frames {
		got, err := fr.Next(1 << 20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := fr.Next(1 << 20); err != io.EOF {
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
			_, err := NewReader(bytes.NewReader(tc.input)).Next(tc.max)
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
			_, err := NewReader(&errReader{b: prefix, err: cause}).Next(1 << 10)
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
// TestNextInto: get is asked for the frame's length, once it is known to
// be within the limit, and the frame is read into its memory; a frame over
// the limit asks get for nothing.
func TestNextInto(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	frames := [][]byte{bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, 5000), bytes.Repeat([]byte{1}, 9000)}
	for _, f := range frames {
		if err := WriteFrame(bw, f); err != nil {
			t.Fatal(err)
		}
	}
	bw.Flush()
	fr := NewReader(&buf)
	var asked []int
	get := func(n int) []byte {
		asked = append(asked, n)
		return make([]byte, 0, n)
	}
	for i, want := range frames[:2] {
		got, err := fr.NextInto(get, 8192)
		if err != nil || !bytes.Equal(got, want) || cap(got) != len(want) {
			t.Fatalf("frame %d: %d bytes (cap %d), %v; want %d", i, len(got), cap(got), err, len(want))
		}
	}
	if _, err := fr.NextInto(get, 8192); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("a frame over the limit: %v", err)
	}
	if fmt.Sprint(asked) != "[300 5000]" {
		t.Errorf("get was asked for %v, want [300 5000]", asked)
	}
}

func TestFrameAllocBounded(t *testing.T) {
	in := append([]byte{0x80, 0x80, 0x80, 0x20}, make([]byte, 100)...) // claims 64 MiB
	before := memStats()
	for range 10 {
		fr := NewReader(bytes.NewReader(in))
		if _, err := fr.Next(1 << 30); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated frame: %v", err)
		}
	}
	if grew := memStats() - before; grew > 10<<20 {
		t.Fatalf("10 frames of 100 bytes claiming 64 MiB allocated %d bytes", grew)
	}
}

func TestHello(t *testing.T) {
	for _, h := range []Hello{{Root: []byte{1}}, {Root: bytes.Repeat([]byte{2}, 32), Coded: true}, {Root: bytes.Repeat([]byte{3}, MaxRootLen), Watch: true}, {Root: []byte{4}, Coded: true, Watch: true}, {Root: []byte{5}, Placed: true}, {Root: []byte{6}, Holds: true, Watch: true}, {Root: []byte{7}, Private: true, Holds: true}} {
		got, err := DecodeHello(h.Append(nil))
		if err != nil || !bytes.Equal(got.Root, h.Root) || got.Coded != h.Coded || got.Watch != h.Watch || got.Placed != h.Placed || got.Holds != h.Holds || got.Private != h.Private {
			t.Fatalf("%+v: got %+v, %v", h, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {TypeHello}, {TypeHello, 0, 0}, {TypeHello, 2, 1, 0}, {TypeHello, 1, 1, 0x80}, {TypeWant, 1, 1, 0}, {TypeHello, 1, 1, 0, 0}} {
		if _, err := DecodeHello(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeHello(%v): %v", bad, err)
		}
	}
}

func TestWant(t *testing.T) {
	idx := []int{0, 1, 127, 128, 1 << 20}
	got, err := DecodeWant(nil, AppendWant(nil, idx), 16, 1<<21)
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
		"too many":        {AppendWant(nil, make([]int, 17)), 16, 10},
		"out of range":    {AppendWant(nil, []int{10}), 16, 10},
		"count > bytes":   {[]byte{TypeWant, 5, 1}, 16, 10},
		"trailing bytes":  {append(AppendWant(nil, []int{1}), 0), 16, 10},
		"truncated index": {[]byte{TypeWant, 1, 0x80}, 16, 10},
		"wrong type":      {[]byte{TypeBlock, 0}, 16, 10},
	} {
		if _, err := DecodeWant(nil, tc.b, tc.max, tc.limit); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestHave: have frames round-trip and are bounded as wants are; an error
// frame in their place is the remote's error.
func TestHave(t *testing.T) {
	idx := []int{3, 0, 1 << 20}
	got, err := DecodeHave(nil, AppendHave(nil, idx), 16, 1<<21)
	if err != nil || !slices.Equal(got, idx) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := DecodeHave(nil, AppendWant(nil, idx), 16, 1<<21); !errors.Is(err, ErrMalformed) {
		t.Errorf("a want decoded as a have: %v", err)
	}
	if _, err := DecodeHave(nil, AppendHave(nil, make([]int, 17)), 16, 10); !errors.Is(err, ErrMalformed) {
		t.Errorf("17 indices, limit 16: %v", err)
	}
	if _, err := DecodeHave(nil, AppendHave(nil, []int{10}), 16, 10); !errors.Is(err, ErrMalformed) {
		t.Errorf("index out of range: %v", err)
	}
	if _, err := DecodeHave(nil, AppendError(nil, BusyText), 16, 10); !errors.Is(err, ErrBusy) {
		t.Errorf("error frame: %v, want ErrBusy", err)
	}
}

func TestBlockFrames(t *testing.T) {
	data := []byte("payload")
	i, got, ok, err := DecodeBlock(append(AppendBlockHeader(nil, 300), data...), 301)
	if err != nil || !ok || i != 300 || !bytes.Equal(got, data) {
		t.Fatalf("block: %d %q %v %v", i, got, ok, err)
	}
	i, got, ok, err = DecodeBlock(AppendMissing(nil, 5), 6)
	if err != nil || ok || i != 5 || got != nil {
		t.Fatalf("missing: %d %q %v %v", i, got, ok, err)
	}
	if _, _, _, err := DecodeBlock(AppendBlockHeader(nil, 6), 6); !errors.Is(err, ErrMalformed) {
		t.Errorf("index out of range: %v", err)
	}
	if _, _, _, err := DecodeBlock(AppendError(nil, UnknownRootText), 6); !errors.Is(err, ErrUnknownRoot) {
		t.Errorf("error frame: %v", err)
	}
	if _, _, _, err := DecodeBlock(append(AppendMissing(nil, 1), 0), 6); !errors.Is(err, ErrMalformed) {
		t.Errorf("bytes after missing: %v", err)
	}
}

func TestErrorFrames(t *testing.T) {
	err := DecodeError(AppendError(nil, "disk on fire\x1b[2J"+strings.Repeat("x", 1000)))
	if !errors.Is(err, ErrRemote) || strings.ContainsAny(err.Error(), "\x1b\n") || len(err.Error()) > MaxErrorText+64 {
		t.Fatalf("%q", err)
	}
}

func testAddrInfos(t testing.TB, n int) []lpeer.AddrInfo {
	var out []lpeer.AddrInfo
	for i := range n {
		p := newKeyID(t, i)
		a := ma.StringCast("/ip4/127.0.0.1/tcp/" + string(rune('1'+i%9)) + "000")
		b := ma.StringCast("/ip6/::1/udp/4001/quic-v1")
		out = append(out, lpeer.AddrInfo{ID: p, Addrs: []ma.Multiaddr{a, b}})
	}
	return out
}

func TestPeersRoundTrip(t *testing.T) {
	infos := testAddrInfos(t, 3)
	got, err := DecodePeers(AppendPeers(nil, infos))
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
	b := AppendPeers(nil, infos)
	for n := 0; n < len(b); n++ {
		if _, err := DecodePeers(b[:n]); err == nil {
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
		fr := NewReader(bytes.NewReader(b))
		// The same frames read by Begin a few bytes at a time.
		pr := NewReader(bytes.NewReader(b))
		for range 64 {
			got, err := fr.Next(1 << 10)
			n, perr := pr.Begin(1 << 10)
			if (err == nil) != (perr == nil) && !(err == io.ErrUnexpectedEOF && perr == nil) {
				t.Fatalf("Next: %v, Begin: %v", err, perr)
			}
			if perr == nil {
				piece := make([]byte, 3)
				var whole []byte
				for len(whole) < n {
					p := piece[:min(len(piece), n-len(whole))]
					if perr = pr.ReadFull(p); perr != nil {
						break
					}
					whole = append(whole, p...)
				}
				if err == nil && (perr != nil || !bytes.Equal(whole, got)) {
					t.Fatalf("Begin read %x (%v), Next %x", whole, perr, got)
				}
				if err != nil && perr == nil {
					t.Fatalf("Next failed (%v), Begin read %x", err, whole)
				}
			}
			if err != nil {
				return
			}
			if len(got) > 1<<10 {
				t.Fatalf("frame of %d bytes over the limit", len(got))
			}
		}
	})
}

// TestBeginReadFull: a frame begun is read in pieces, no further than its
// end, and must be read to its end before the next.
func TestBeginReadFull(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	WriteFrame(w, []byte("hello, "), []byte("pieces"))
	WriteFrame(w, []byte("next"))
	w.Flush()
	fr := NewReader(&b)
	n, err := fr.Begin(64)
	if err != nil || n != 13 {
		t.Fatalf("Begin: %d, %v", n, err)
	}
	p := make([]byte, 5)
	if err := fr.ReadFull(p); err != nil || string(p) != "hello" {
		t.Fatalf("ReadFull: %q, %v", p, err)
	}
	if _, err := fr.Next(64); err == nil {
		t.Fatal("Next inside a frame begun: no error")
	}
	if err := fr.ReadFull(make([]byte, 9)); err == nil {
		t.Fatal("a read past the frame's end: no error")
	}
	rest := make([]byte, 8)
	if err := fr.ReadFull(rest); err != nil || string(rest) != ", pieces" {
		t.Fatalf("ReadFull: %q, %v", rest, err)
	}
	if f, err := fr.Next(64); err != nil || string(f) != "next" {
		t.Fatalf("Next after the frame: %q, %v", f, err)
	}
	if _, err := fr.Begin(64); err != io.EOF {
		t.Fatalf("Begin at the end: %v, want io.EOF", err)
	}
	var big bytes.Buffer
	w = bufio.NewWriter(&big)
	WriteFrame(w, make([]byte, 100))
	w.Flush()
	if _, err := NewReader(&big).Begin(99); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Begin over the limit: %v", err)
	}
}

// FuzzDecoders runs every message decoder on arbitrary input.
func FuzzDecoders(f *testing.F) {
	f.Add(Hello{Root: []byte{1, 2}}.Append(nil))
	f.Add(AppendWant(nil, []int{1, 2, 3}))
	f.Add(AppendHave(nil, []int{4, 5}))
	f.Add(append(AppendBlockHeader(nil, 3), 1, 2))
	f.Add(AppendMissing(nil, 9))
	f.Add(AppendError(nil, "x"))
	f.Add(AppendPeers(nil, nil))
	f.Add(AppendPlace(nil, 4, []Placement{{Stripe: 1, Kind: PlaceChild, Peer: lpeer.AddrInfo{ID: "x"}}, {Stripe: 3}}))
	f.Add(AppendDeltaAsk(nil, 990, 10, []byte("sig")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, n, sig, err := DecodeDeltaAsk(b, 1000, 16); err == nil && (a < 0 || n < 1 || n > 16 || a+n > 1000 || len(sig) > len(b)) {
			t.Fatalf("delta ask of %d blocks from %d", n, a)
		}
		if h, err := DecodeHello(b); err == nil && !bytes.Equal(h.Append(nil), b) {
			t.Fatalf("Hello does not round-trip")
		}
		if idx, err := DecodeWant(nil, b, 64, 1000); err == nil {
			if len(idx) > 64 {
				t.Fatalf("want %v", idx)
			}
			for _, i := range idx {
				if i < 0 || i >= 1000 {
					t.Fatalf("index %d out of range", i)
				}
			}
		}
		if idx, err := DecodeHave(nil, b, 64, 1000); err == nil {
			if len(idx) > 64 || slices.ContainsFunc(idx, func(i int) bool { return i < 0 || i >= 1000 }) {
				t.Fatalf("have %v out of its bounds", idx)
			}
		}
		if i, data, _, err := DecodeBlock(b, 1000); err == nil && (i < 0 || i >= 1000 || len(data) > len(b)) {
			t.Fatalf("block %d", i)
		}
		if infos, err := DecodePeers(b); err == nil {
			if len(infos) > MaxPeersListed {
				t.Fatalf("%d peers", len(infos))
			}
			for _, ai := range infos {
				if len(ai.Addrs) > MaxAddrsListed {
					t.Fatalf("%d addrs", len(ai.Addrs))
				}
			}
		}
		if k, ps, err := DecodePlace(b, 16); err == nil {
			if k < 1 || k > 16 || len(ps) > MaxPlacements {
				t.Fatalf("%d stripes, %d placements", k, len(ps))
			}
			for _, p := range ps {
				if p.Stripe < 0 || p.Stripe >= k || p.Kind > PlaceDrop || p.Kind != PlaceParent && p.Peer.ID == "" {
					t.Fatalf("placement %+v of %d stripes", p, k)
				}
			}
		}
		_ = DecodeError(b)
		_, _ = DecodeTyped(b, TypeManifest)
	})
}

// TestPlaceRoundTrip encodes placements (a parent of none among them) and
// decodes them back; every shorter prefix, a stripe beyond the count and
// an unknown kind are refused.
func TestPlaceRoundTrip(t *testing.T) {
	a := ma.StringCast("/ip4/10.0.0.1/tcp/4001")
	id, err := lpeer.Decode("12D3KooWLxr1mHhmeJtbmBWfDeHgfeXwFwKbjqZkzFP1jBqhbNWj")
	if err != nil {
		t.Fatal(err)
	}
	in := []Placement{{Stripe: 0, Kind: PlaceParent, Peer: lpeer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{a}}},
		{Stripe: 3, Kind: PlaceParent}, {Stripe: 2, Kind: PlaceChild, Peer: lpeer.AddrInfo{ID: id}}, {Stripe: 1, Kind: PlaceDrop, Peer: lpeer.AddrInfo{ID: id}}}
	b := AppendPlace(nil, 4, in)
	k, out, err := DecodePlace(b, 16)
	if err != nil || k != 4 || len(out) != len(in) {
		t.Fatalf("got %d stripes, %v, %v", k, out, err)
	}
	for i := range in {
		if out[i].Stripe != in[i].Stripe || out[i].Kind != in[i].Kind || out[i].Peer.ID != in[i].Peer.ID || len(out[i].Peer.Addrs) != len(in[i].Peer.Addrs) {
			t.Fatalf("placement %d: got %+v, want %+v", i, out[i], in[i])
		}
	}
	for n := range len(b) {
		if _, _, err := DecodePlace(b[:n], 16); err == nil {
			t.Fatalf("prefix of %d bytes decoded", n)
		}
	}
	for _, bad := range [][]Placement{{{Stripe: 4}}, {{Stripe: 0, Kind: 3, Peer: lpeer.AddrInfo{ID: id}}}, {{Stripe: 0, Kind: PlaceChild}}} {
		if _, _, err := DecodePlace(AppendPlace(nil, 4, bad), 16); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%+v: %v, want ErrMalformed", bad, err)
		}
	}
	if _, _, err := DecodePlace(AppendPlace(nil, 17, nil), 16); !errors.Is(err, ErrMalformed) {
		t.Fatalf("17 stripes: %v", err)
	}
}

// TestDeltaAsk: a delta ask round-trips, and runs outside the content or
// over the bound are malformed.
func TestDeltaAsk(t *testing.T) {
	a, n, sig, err := DecodeDeltaAsk(AppendDeltaAsk(nil, 990, 10, []byte("sig")), 1000, 16)
	if err != nil || a != 990 || n != 10 || string(sig) != "sig" {
		t.Fatalf("%d, %d, %q, %v", a, n, sig, err)
	}
	for name, f := range map[string][]byte{
		"past the end":  AppendDeltaAsk(nil, 991, 10, nil),
		"no blocks":     AppendDeltaAsk(nil, 5, 0, nil),
		"over the run":  AppendDeltaAsk(nil, 0, 17, nil),
		"first too far": AppendDeltaAsk(nil, 1000, 1, nil),
		"huge count":    AppendDeltaAsk(nil, 1, 1<<62, nil),
		"torn":          {TypeDelta, 0x80},
		"other type":    AppendHave(nil, []int{1}),
	} {
		if _, _, _, err := DecodeDeltaAsk(f, 1000, 16); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
