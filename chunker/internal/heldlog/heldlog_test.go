package heldlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

func FuzzReplayLog(f *testing.F) {
	id := [32]byte{1, 2, 3}
	seed := Seed(id)
	good := Header(id)
	for i, op := range []Op{Held, Held, Dropped, Held} {
		good = AppendRecord(good, seed, i, op)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(Header([32]byte{9}))
	f.Add([]byte("reconcile-held"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const n = 10
		held := NewBitset(n)
		valid, records, bad, err := Replay(bytes.NewReader(b), id, n, held)
		if err != nil {
			return
		}
		if valid > int64(len(b)) || (valid-HeaderSize)%RecordSize != 0 || int64(records) != (valid-HeaderSize)/RecordSize || bad > records {
			t.Fatalf("valid %d, records %d, bad %d of %d bytes", valid, records, bad, len(b))
		}
		if len(b)-int(valid) >= RecordSize {
			t.Fatalf("stopped %d bytes before the end", len(b)-int(valid))
		}
		if held.Count() > records {
			t.Fatalf("%d held from %d records", held.Count(), records)
		}
	})
}

func TestReplayLog(t *testing.T) {
	id := [32]byte{7}
	seed := Seed(id)
	b := Header(id)
	b = AppendRecord(b, seed, 3, Held)
	b = AppendRecord(b, seed, 5, Held)
	b = AppendRecord(b, seed, 3, Dropped)
	b = AppendRecord(b, seed, 8, Held)
	b = AppendRecord(b, seed, 5, 7) // unknown op
	held := NewBitset(10)
	valid, records, bad, err := Replay(bytes.NewReader(append(b, 1, 2, 3)), id, 10, held)
	if err != nil || valid != int64(len(b)) || records != 5 || bad != 1 {
		t.Fatalf("valid %d, records %d, bad %d, %v", valid, records, bad, err)
	}
	if held.Has(3) || !held.Has(5) || !held.Has(8) || held.Count() != 2 {
		t.Fatalf("held %v", held)
	}
}

// TestReplayHeader checks the errors of a log that cannot be replayed: no
// header, a damaged one, one of another manifest.
func TestReplayHeader(t *testing.T) {
	id := [32]byte{7}
	damaged := Header(id)
	damaged[20] ^= 1
	for _, tc := range []struct {
		name string
		log  []byte
		want error
	}{
		{"empty", nil, ErrBadHeader},
		{"short", Header(id)[:HeaderSize-1], ErrBadHeader},
		{"damaged", damaged, ErrBadHeader},
		{"other manifest", Header([32]byte{8}), ErrOtherManifest},
	} {
		_, _, _, err := Replay(bytes.NewReader(tc.log), id, 10, NewBitset(10))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestLog checks a Log's life: created by Load, appended to, compacted by
// Rewrite, and read back by Load after each step, a torn record cut off by Open.
func TestLog(t *testing.T) {
	dir, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	const n = 100
	id := [32]byte{4, 2}
	reload := func() (Bitset, int64, int) {
		t.Helper()
		held := NewBitset(n)
		valid, records, err := New(dir, "held", id).Load(context.Background(), held, n)
		if err != nil {
			t.Fatal(err)
		}
		return held, valid, records
	}
	l := New(dir, "held", id)
	held := NewBitset(n)
	valid, records, err := l.Load(context.Background(), held, n)
	if err != nil || valid != HeaderSize || records != 0 || held.Count() != 0 {
		t.Fatalf("new log: valid %d, records %d, held %d, %v", valid, records, held.Count(), err)
	}
	if err := l.Open(valid); err != nil || !l.IsOpen() {
		t.Fatalf("Open: %v", err)
	}
	if w, err := l.Append([]int{1, 2, 64, 99}, Held); !w || err != nil {
		t.Fatalf("Append: %v, %v", w, err)
	}
	if w, err := l.Append([]int{2}, Dropped); !w || err != nil {
		t.Fatalf("Append: %v, %v", w, err)
	}
	got, valid, records := reload()
	if records != 5 || got.Count() != 3 || !got.Has(1) || got.Has(2) || !got.Has(64) || !got.Has(99) {
		t.Fatalf("reloaded %d records, held %v", records, got)
	}
	// A torn record at the end is cut off when the log is opened again.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := dir.OpenFile("held", os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{1, 2, 3})
	f.Close()
	if err := l.Open(valid); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]int{7}, Held); err != nil {
		t.Fatal(err)
	}
	if got, _, records := reload(); records != 6 || got.Count() != 4 || !got.Has(7) {
		t.Fatalf("after a torn record: %d records, held %v", records, got)
	}
	// Rewrite keeps exactly the members, one record each.
	all := NewBitset(n)
	all.SetAll(n)
	if err := l.Rewrite(all, n); err != nil {
		t.Fatal(err)
	}
	if got, _, records := reload(); records != n || got.Count() != n {
		t.Fatalf("after Rewrite: %d records, %d held", records, got.Count())
	}
	if err := l.Close(); err != nil || l.IsOpen() {
		t.Fatalf("Close: %v", err)
	}
}

func TestBitset(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 130} {
		b := NewBitset(n)
		b.SetAll(n)
		if b.Count() != n {
			t.Errorf("SetAll(%d): %d members", n, b.Count())
		}
		if n > 0 {
			b.Clear(n - 1)
			if b.Has(n-1) || b.Count() != n-1 {
				t.Errorf("Clear(%d) of %d: has %v, %d members", n-1, n, b.Has(n-1), b.Count())
			}
			b.Set(n - 1)
			if !b.Has(n - 1) {
				t.Errorf("Set(%d) of %d: not a member", n-1, n)
			}
		}
	}
}

// ExampleReplay builds a log of three records and replays it.
func ExampleReplay() {
	id := [32]byte{1}
	seed := Seed(id)
	log := Header(id)
	log = AppendRecord(log, seed, 0, Held)
	log = AppendRecord(log, seed, 2, Held)
	log = AppendRecord(log, seed, 0, Dropped)
	held := NewBitset(4)
	valid, records, bad, err := Replay(bytes.NewReader(log), id, 4, held)
	fmt.Println(valid, records, bad, err)
	fmt.Println(held.Has(0), held.Has(2), held.Count())
	// Output:
	// 112 3 0 <nil>
	// false true 1
}
