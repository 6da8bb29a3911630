package reconcile

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
)

// TestCacheBytesBound: a universe and a filters cache asked for ever new
// large parameter sets (as a hostile peer can make a server do) keep at most
// maxCachedBytes beside the newest entry.
func TestCacheBytesBound(t *testing.T) {
	u, err := NewUniverse(64)
	if err != nil {
		t.Fatal(err)
	}
	held := NewSet(64)
	held.Add(3)
	f, err := NewFilters(u, held)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		p, err := cbfalgebra.New(1<<24+64*i, 4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Filter(p.Params()); err != nil {
			t.Fatal(err)
		}
		if _, err := f.CBF(p.Params()); err != nil {
			t.Fatal(err)
		}
		largest := filterBytes(p.Params()) + 4*64*4
		if u.bytes > maxCachedBytes+largest {
			t.Fatalf("after %d parameter sets the universe caches %d bytes", i+1, u.bytes)
		}
		if f.bytes > maxCachedBytes+largest {
			t.Fatalf("after %d parameter sets the filters cache %d bytes", i+1, f.bytes)
		}
		var sum int64
		for _, e := range u.cache {
			sum += e.size
		}
		if sum != u.bytes {
			t.Fatalf("universe counts %d bytes, its entries hold %d", u.bytes, sum)
		}
	}
}

// TestUniverseTrim: Trim keeps the entries used since the previous Trim and
// drops the others.
func TestUniverseTrim(t *testing.T) {
	u, err := NewUniverse(64)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := cbfalgebra.New(1024, 4)
	p2, _ := cbfalgebra.New(2048, 4)
	u.Filter(p1.Params())
	u.Filter(p2.Params())
	if d := u.Trim(); d != 0 {
		t.Fatalf("first Trim dropped %d bytes of entries just used", d)
	}
	u.Filter(p1.Params())
	if d := u.Trim(); d == 0 || len(u.cache) != 1 {
		t.Fatalf("second Trim dropped %d bytes, kept %d entries; want p2 dropped", d, len(u.cache))
	}
	if _, ok := u.cache[p1.Params()]; !ok {
		t.Fatal("the entry in use was dropped")
	}
	if d := u.Trim(); d == 0 || len(u.cache) != 0 || u.bytes != 0 {
		t.Fatalf("third Trim dropped %d bytes, kept %d entries, %d bytes", d, len(u.cache), u.bytes)
	}
}
