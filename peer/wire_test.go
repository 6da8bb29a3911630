package peer

import (
	"math/rand/v2"
	"testing"
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
