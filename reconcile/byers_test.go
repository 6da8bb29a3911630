package reconcile

import (
	"errors"
	"testing"

	"github.com/reconcile-p2p/reconcile/erasure"
)

// TestByersStoreLacksHeld: a Byers session whose store lacks a block of its
// held set fails at NewSession instead of failing to decode later.
func TestByersStoreLacksHeld(t *testing.T) {
	code, err := erasure.New(10, 20, 16)
	if err != nil {
		t.Fatal(err)
	}
	uv, _ := NewUniverse(20)
	held := NewSet(20)
	held.Add(3)
	held.Add(4)
	st := NewMemBlocks(20, 16)
	st.Put(3, make([]byte, 16))
	_, err = NewSession(1, Config{Method: Byers, Code: code}, uv, held, st)
	if !errors.Is(err, ErrUniverse) || !errors.Is(err, erasure.ErrBlock) {
		t.Fatalf("NewSession: %v, want ErrUniverse and erasure.ErrBlock", err)
	}
	st.Put(4, make([]byte, 16))
	if _, err := NewSession(1, Config{Method: Byers, Code: code}, uv, held, st); err != nil {
		t.Fatal(err)
	}
}
