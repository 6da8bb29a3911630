package chunker

import (
	"bytes"
	"testing"
)

func FuzzReplayLog(f *testing.F) {
	id := ID{1, 2, 3}
	seed := logSeed(id)
	good := logHeader(id)
	for i, op := range []uint32{opHeld, opHeld, opDropped, opHeld} {
		good = appendRecord(good, seed, i, op)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(logHeader(ID{9}))
	f.Add([]byte("reconcile-held"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const n = 10
		held := newBitset(n)
		valid, records, bad, err := replayLog(bytes.NewReader(b), id, n, held)
		if err != nil {
			return
		}
		if valid > int64(len(b)) || (valid-logHeaderSize)%logRecordSize != 0 || int64(records) != (valid-logHeaderSize)/logRecordSize || bad > records {
			t.Fatalf("valid %d, records %d, bad %d of %d bytes", valid, records, bad, len(b))
		}
		if len(b)-int(valid) >= logRecordSize {
			t.Fatalf("stopped %d bytes before the end", len(b)-int(valid))
		}
		if held.count() > records {
			t.Fatalf("%d held from %d records", held.count(), records)
		}
	})
}

func TestReplayLog(t *testing.T) {
	id := ID{7}
	seed := logSeed(id)
	b := logHeader(id)
	b = appendRecord(b, seed, 3, opHeld)
	b = appendRecord(b, seed, 5, opHeld)
	b = appendRecord(b, seed, 3, opDropped)
	b = appendRecord(b, seed, 8, opHeld)
	b = appendRecord(b, seed, 5, 7) // unknown op
	held := newBitset(10)
	valid, records, bad, err := replayLog(bytes.NewReader(append(b, 1, 2, 3)), id, 10, held)
	if err != nil || valid != int64(len(b)) || records != 5 || bad != 1 {
		t.Fatalf("valid %d, records %d, bad %d, %v", valid, records, bad, err)
	}
	if held.has(3) || !held.has(5) || !held.has(8) || held.count() != 2 {
		t.Fatalf("held %v", held)
	}
}
