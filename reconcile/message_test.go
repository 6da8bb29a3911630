package reconcile

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/vmihailenco/msgpack/v5"
)

func sampleMessages(t testing.TB) []Message {
	c, err := cbfalgebra.New(256, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Insert([]byte("x"))
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return []Message{
		{Type: MsgFilter, Session: 1, Filter: FilterMsg{Method: Complete, Params: c.Params(), Universe: 1000, SetSize: 10, Reply: true, Data: data}},
		{Type: MsgFilter, Session: 1 << 40, Filter: FilterMsg{Method: Byers, Params: cbfalgebra.Params{M: 64, K: 2, R: 1, Seed: 99}, Universe: 5, SetSize: 0}},
		{Type: MsgOffer, Session: 2, Indices: []uint32{0, 1, 2, 200, 70000, 1 << 31}},
		{Type: MsgOffer, Session: 3},
		{Type: MsgBlocks, Session: 4, Indices: []uint32{3, 9}, BlockSize: 4, Data: []byte("abcdefgh")},
		{Type: MsgBlocks, Session: 4, BlockSize: 64},
		{Type: MsgReject, Session: 5, Reason: "not homologous"},
		{Type: MsgFilter, Session: 6, Filter: FilterMsg{Method: IBLT, Params: cbfalgebra.Params{Seed: 3}, Universe: 1000, SetSize: 2, Reply: true,
			Data: appendIBLTCells(nil, 0, []ibltCell{{sum: ibltHash(3, 5) ^ ibltHash(3, 9), count: 2}})}},
		{Type: MsgFilter, Session: 7, Filter: FilterMsg{Method: Bitfield, Universe: 12, SetSize: 3, Data: []byte{0x07, 0x00}}},
		{Type: MsgFilter, Session: 8, Filter: FilterMsg{Method: CCBF, Params: c.Params(), Universe: 1000, SetSize: 1, Data: CompressFilter(nil, data)}},
		{Type: MsgMore, Session: 9, Cells: 1234},
		{Type: MsgWant, Session: 10, Indices: []uint32{4, 8, 15, 16, 23, 42}},
		{Type: MsgWant, Session: 11},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range sampleMessages(t) {
		t.Run(m.Type.String(), func(t *testing.T) {
			b, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if got := m.EncodedSize(); got != len(b) {
				t.Fatalf("EncodedSize = %d, encoding has %d bytes", got, len(b))
			}
			got, err := Decode(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Indices) == 0 {
				got.Indices = nil
			}
			want := m
			if len(want.Indices) == 0 {
				want.Indices = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
			// The generic msgpack decoder reads it too: it is plain msgpack.
			var v []any
			if err := msgpack.Unmarshal(b, &v); err != nil || len(v) < 3 {
				t.Fatalf("not a msgpack array: %v %v", v, err)
			}
		})
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	bad := []Message{
		{Type: 0},
		{Type: 9},
		{Type: MsgOffer, Indices: []uint32{5, 5}},
		{Type: MsgOffer, Indices: []uint32{5, 4}},
		{Type: MsgBlocks, Indices: []uint32{1}, BlockSize: 4, Data: []byte("abc")},
		{Type: MsgBlocks, Indices: nil, BlockSize: 0},
		{Type: MsgFilter, Filter: FilterMsg{Universe: -1}},
	}
	for _, m := range bad {
		if _, err := m.MarshalBinary(); !errors.Is(err, ErrMessage) {
			t.Errorf("%+v: err = %v, want ErrMessage", m, err)
		}
	}
}

// enc builds raw msgpack for hostile inputs.
func enc(t *testing.T, fields ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	if err := e.EncodeArrayLen(len(fields)); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if err := e.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestDecodeHostile(t *testing.T) {
	small := Limits{MaxMessage: 1 << 16, MaxIndices: 100, MaxBlockSize: 128, MaxFilterBytes: 1 << 12, MaxUniverse: 1 << 20, MaxReason: 16}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMessage},
		{"not an array", []byte{0x01}, ErrMessage},
		{"wrong version", enc(t, 2, 2, 0, 0, []byte{}), ErrVersion},
		{"unknown type", enc(t, 1, 9, 0), ErrMessage},
		{"too few fields", enc(t, 1, 2, 0, 0), ErrMessage},
		{"too many fields", enc(t, 1, 2, 0, 0, []byte{}, 7), ErrMessage},
		{"negative int", enc(t, 1, 2, 0, -1, []byte{}), ErrMessage},
		{"string for bytes", enc(t, 1, 2, 0, 1, 5), ErrMessage},
		{"count beyond bytes", enc(t, 1, 2, 0, 50, []byte{1}), ErrMessage},
		{"oversized count", enc(t, 1, 2, 0, 1000, make([]byte, 1000)), ErrLimit},
		{"trailing index bytes", enc(t, 1, 2, 0, 1, []byte{1, 2}), ErrMessage},
		{"truncated varint", enc(t, 1, 2, 0, 1, []byte{0x80}), ErrMessage},
		{"index overflow", enc(t, 1, 2, 0, 2, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}), ErrMessage},
		{"block data short", enc(t, 1, 3, 0, 1, []byte{0}, 4, []byte("abc")), ErrMessage},
		{"block size zero", enc(t, 1, 3, 0, 0, []byte{}, 0, []byte{}), ErrMessage},
		{"block size over limit", enc(t, 1, 3, 0, 1, []byte{0}, 1000, make([]byte, 1000)), ErrLimit},
		{"filter field count", enc(t, 1, 1, 0, 1, 64, 2), ErrMessage},
		{"filter set > universe", enc(t, 1, 1, 0, 1, 64, 2, 4, 0, 0, 10, 11, false, []byte{}), ErrMessage},
		{"filter universe over limit", enc(t, 1, 1, 0, 1, 64, 2, 4, 0, 0, 1<<30, 1, false, []byte{}), ErrLimit},
		{"filter k over max", enc(t, 1, 1, 0, 1, 64, 100, 4, 0, 0, 10, 1, false, []byte{}), ErrLimit},
		{"filter bytes over limit", enc(t, 1, 1, 0, 1, 64, 2, 4, 0, 0, 10, 1, false, make([]byte, 5000)), ErrLimit},
		{"filter bool wrong", enc(t, 1, 1, 0, 1, 64, 2, 4, 0, 0, 10, 1, 3, []byte{}), ErrMessage},
		{"reason too long", enc(t, 1, 4, 0, "0123456789abcdefXYZ"), ErrLimit},
		{"trailing bytes", append(enc(t, 1, 4, 0, "x"), 0), ErrMessage},
		{"message over limit", make([]byte, 1<<17), ErrLimit},
		{"declared bin beyond input", []byte{0x95, 1, 2, 0, 1, 0xc6, 0x7f, 0xff, 0xff, 0xff}, ErrLimit},
		{"declared array 16", []byte{0xdc, 0xff, 0xff, 1}, ErrMessage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b, small)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecodeTruncated: every proper prefix of a valid message is an error.
func TestDecodeTruncated(t *testing.T) {
	for _, m := range sampleMessages(t) {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			if _, err := Decode(b[:n], Limits{}); err == nil {
				t.Fatalf("%v: prefix of %d/%d bytes decoded", m.Type, n, len(b))
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages(f) {
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	lim := Limits{MaxMessage: 1 << 16, MaxIndices: 1 << 12, MaxBlockSize: 1 << 10, MaxFilterBytes: 1 << 14}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b, lim)
		if err != nil {
			return
		}
		// whatever decodes re-encodes to the same message
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded message does not encode: %v (%+v)", err, m)
		}
		m2, err := Decode(again, lim)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if m.EncodedSize() != len(again) || !reflect.DeepEqual(normal(m), normal(m2)) {
			t.Fatalf("round trip differs:\n%+v\n%+v", m, m2)
		}
	})
}

func normal(m Message) Message {
	if len(m.Indices) == 0 {
		m.Indices = nil
	}
	if len(m.Data) == 0 {
		m.Data = nil
	}
	if len(m.Filter.Data) == 0 {
		m.Filter.Data = nil
	}
	return m
}

func TestMethodParse(t *testing.T) {
	for _, m := range AllMethods {
		got, err := ParseMethod(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseMethod(%q) = %v, %v", m, got, err)
		}
		b, _ := m.MarshalText()
		var back Method
		if err := back.UnmarshalText(b); err != nil || back != m {
			t.Fatalf("text round trip of %v: %v %v", m, back, err)
		}
	}
	if got, err := ParseMethod("BYERS"); err != nil || got != Byers {
		t.Fatalf("case-insensitive parse: %v %v", got, err)
	}
	if got, err := ParseMethod("IBLT"); err != nil || got != IBLT {
		t.Fatalf("case-insensitive parse: %v %v", got, err)
	}
	for _, s := range []string{"", "iblt2", "complete ", "zstd"} {
		if _, err := ParseMethod(s); !errors.Is(err, ErrMethod) {
			t.Fatalf("ParseMethod(%q) err = %v", s, err)
		}
	}
	if Method(9).Valid() || Method(0).Valid() {
		t.Fatal("invalid methods report valid")
	}
}
