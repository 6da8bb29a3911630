package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/chunker"
)

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
