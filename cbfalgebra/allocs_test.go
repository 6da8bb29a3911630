package cbfalgebra

import "testing"

// TestHotPathsDoNotAllocate proves the hot paths allocation-free.
func TestHotPathsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation may allocate")
	}
	for _, h := range []HashFamily{HashFast, HashSHA1} {
		if h == HashSHA1 && raceEnabled {
			continue // its scratch comes from a sync.Pool, which -race empties at random
		}
		p := Params{M: 1 << 16, K: 6, R: 4, Hash: h}
		a, b, u := sampleCBF(t, p, 100), sampleCBF(t, p, 200), sampleCBF(t, p, 300)
		dst, _ := NewFromParams(p)
		bf, _ := NewBloomFromParams(p)
		key := []byte("some block id")
		locs := make([]uint32, 0, MaxK)
		buf := make([]byte, 0, a.EncodedSize())
		for name, f := range map[string]func(){
			"Locations":         func() { locs = p.Locations(locs[:0], key) },
			"Insert":            func() { a.Insert(key) },
			"Contains":          func() { a.Contains(key) },
			"Count":             func() { a.Count(key) },
			"Delete":            func() { a.Insert(key); _ = a.Delete(key) },
			"InsertLocations":   func() { a.InsertLocations(locs) },
			"ContainsLocations": func() { a.ContainsLocations(locs) },
			"BloomAdd":          func() { bf.Add(key) },
			"BloomContains":     func() { bf.Contains(key) },
			"SubtractInto":      func() { _ = SubtractInto(dst, a, b, u) },
			"ComplementInto":    func() { _ = ComplementInto(dst, u, b) },
			"IntersectInto":     func() { _ = IntersectInto(dst, a, b) },
			"UnionInto":         func() { _ = UnionInto(dst, a, b, u) },
			"XorInto":           func() { _ = XorInto(dst, a, b, u) },
			"Equal":             func() { _, _ = Equal(a, b) },
			"LessEq":            func() { _, _ = LessEq(a, b) },
			"AppendBinary":      func() { buf, _ = a.AppendBinary(buf[:0]) },
			"FillRatio":         func() { _ = a.FillRatio() + float64(a.Saturated()) },
		} {
			if n := testing.AllocsPerRun(100, f); n != 0 {
				t.Errorf("%s %s: %v allocations per run", h, name, n)
			}
		}
	}
}
