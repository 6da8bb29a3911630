package reconcile

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/erasure"
)

// splitSets draws S_A and S_B over [0, u) with |S_A ∩ S_B| = shared, |S_A| = na,
// |S_B| = nb, at random.
func splitSets(rng *rand.Rand, u, na, nb, shared int) (*Set, *Set) {
	perm := rng.Perm(u)
	a, b := NewSet(u), NewSet(u)
	for _, i := range perm[:shared] {
		a.Add(i)
		b.Add(i)
	}
	rest := perm[shared:]
	for _, i := range rest[:na-shared] {
		a.Add(i)
	}
	for _, i := range rest[na-shared : na-shared+nb-shared] {
		b.Add(i)
	}
	return a, b
}

func blockData(i, size int) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i*31 + j*7 + i>>8)
	}
	return b
}

func storeOf(s *Set, size int) *MemBlocks {
	st := NewMemBlocks(s.Universe(), size)
	for _, i := range s.Indices() {
		st.Put(i, blockData(i, size))
	}
	return st
}

// TestCompleteProperty: for random sets, sizes, parameters and modes, the complete
// two-way exchange misses nothing and leaves both sides with S_A ∪ S_B.
func TestCompleteProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	trials := 60
	if testing.Short() {
		trials = 15
	}
	for trial := range trials {
		u := 1 + rng.IntN(3000)
		na, nb := rng.IntN(u+1), rng.IntN(u+1)
		lo := max(0, na+nb-u)
		shared := lo + rng.IntN(min(na, nb)-lo+1)
		a, b := splitSets(rng, u, na, nb, shared)
		cfg := Config{
			Method:         Complete,
			BitsPerElement: []float64{0, 2, 4, 16}[rng.IntN(4)], // tiny filters too: still no misses
			R:              []int{4, 8}[rng.IntN(2)],
			Hash:           cbfalgebra.HashFamily(rng.IntN(2)),
			Seed:           rng.Uint64(),
		}
		cfg.OneWay = trial%3 == 2
		var sa, sb Blocks
		if trial%2 == 1 {
			sa, sb = storeOf(a, 8), storeOf(b, 8)
		}
		uv, _ := NewUniverse(u)
		A, err := NewSession(uint64(trial), cfg, uv, a, sa)
		if err != nil {
			t.Fatal(err)
		}
		B, err := NewSession(uint64(trial), cfg, uv, b, sb)
		if err != nil {
			t.Fatal(err)
		}
		if err := Run(A, B, Limits{}); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		oa, ob := A.Outcome(), B.Outcome()
		if oa.Missed != 0 || ob.Missed != 0 {
			t.Fatalf("trial %d (u=%d na=%d nb=%d shared=%d %v): missed %d, %d", trial, u, na, nb, shared, oa.Params, oa.Missed, ob.Missed)
		}
		union := na + nb - shared
		if cfg.OneWay {
			if A.Held().Len() != union || B.Held().Len() != nb || ob.Received != 0 {
				t.Fatalf("trial %d one-way: hold %d and %d, union %d", trial, A.Held().Len(), B.Held().Len(), union)
			}
			// the responder's shortcut gives the same answer as the two-way subtraction
			// (with the same filter: without stores A2 would size it for na alone)
			cfg.OneWay = false
			cfg.M, cfg.K = oa.Params.M, oa.Params.K
			A2, _ := NewSession(uint64(trial), cfg, uv, a, nil)
			B2, _ := NewSession(uint64(trial), cfg, uv, b, nil)
			if err := Run(A2, B2, Limits{}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(A.Wanted()) != fmt.Sprint(A2.Wanted()) || oa.Redundant != A2.Outcome().Redundant {
				t.Fatalf("trial %d: one-way and two-way offers differ", trial)
			}
			continue
		}
		if A.Held().Len() != union || B.Held().Len() != union {
			t.Fatalf("trial %d: hold %d and %d, union %d", trial, A.Held().Len(), B.Held().Len(), union)
		}
		if oa.Received != ob.Sent || ob.Received != oa.Sent {
			t.Fatalf("trial %d: sent/received mismatch %+v %+v", trial, oa, ob)
		}
		if oa.Redundant > shared || oa.Received-oa.Redundant != nb-shared {
			t.Fatalf("trial %d: A received %d (%d redundant), want %d new", trial, oa.Received, oa.Redundant, nb-shared)
		}
		if sa != nil { // payloads arrived intact
			for _, i := range A.Wanted() {
				if !bytes.Equal(sa.Block(i), blockData(i, 8)) {
					t.Fatalf("trial %d: block %d corrupted", trial, i)
				}
			}
		}
		if oa.WireSent[MsgFilter] == 0 || oa.WireSent[MsgFilter] != ob.WireReceived[MsgFilter] {
			t.Fatalf("trial %d: wire accounting %v vs %v", trial, oa.WireSent, ob.WireReceived)
		}
		if oa.WireBytes() != ob.WireBytes() {
			t.Fatalf("trial %d: wire totals %d vs %d", trial, oa.WireBytes(), ob.WireBytes())
		}
	}
}

// TestCompleteRedundancyT7: the mean redundancy matches n0 * FPSubtract.
func TestCompleteRedundancyT7(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const n, n0, m, k = 1000, 500, 4096, 3 // fp high enough to measure quickly
	uv, _ := NewUniverse(2*n - n0)
	cfg := Config{M: m, K: k}
	total, trials := 0, 40
	for trial := range trials {
		a, b := splitSets(rng, 2*n-n0, n, n, n0)
		A, _ := NewSession(uint64(trial), cfg, uv, a, nil)
		B, _ := NewSession(uint64(trial), cfg, uv, b, nil)
		if err := Run(A, B, Limits{}); err != nil {
			t.Fatal(err)
		}
		total += A.Outcome().Redundant
	}
	mean := float64(total) / float64(trials)
	want := n0 * cbfalgebra.FPSubtract(m, k, 2*n-n0, n, n, n0)
	// binomial noise of the mean: sd = sqrt(want/trials); allow 5 sd
	if d := mean - want; d*d > 25*want/float64(trials)+1e-9 {
		t.Fatalf("mean redundancy %.2f, T7 expects %.2f", mean, want)
	}
}

func TestByersDecodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, cc := range []struct{ kk, nn, size, n0 int }{{100, 200, 16, 30}, {300, 600, 64, 100}} {
		code, err := erasure.New(cc.kk, cc.nn, cc.size)
		if err != nil {
			t.Fatal(err)
		}
		src := make([][]byte, cc.kk)
		for i := range src {
			src[i] = blockData(i, cc.size)
		}
		coded, err := code.Encode(src)
		if err != nil {
			t.Fatal(err)
		}
		each := (cc.nn + cc.n0) / 2
		a, b := splitSets(rng, cc.nn, each, each, cc.n0)
		mk := func(s *Set) *MemBlocks {
			st := NewMemBlocks(cc.nn, cc.size)
			for _, i := range s.Indices() {
				st.Put(i, coded[i])
			}
			return st
		}
		uv, _ := NewUniverse(cc.nn)
		cfg := Config{Method: Byers, Code: code, OneWay: true, M: 1024, K: 4}
		A, _ := NewSession(1, cfg, uv, a, mk(a))
		B, _ := NewSession(1, cfg, uv, b, mk(b))
		if err := Run(A, B, Limits{}); err != nil {
			t.Fatal(err)
		}
		o := A.Outcome()
		if !o.Decoded || o.DecodeTime <= 0 {
			t.Fatalf("%v: not decoded: %+v", code, o)
		}
		for i := range src {
			if !bytes.Equal(A.Source()[i], src[i]) {
				t.Fatalf("%v: source block %d differs", code, i)
			}
		}
		if o.Redundant != 0 { // a Bloom filter has no false negatives
			t.Fatalf("Byers redundant = %d", o.Redundant)
		}
		if o.Missed+o.Received != each-cc.n0 {
			t.Fatalf("missed %d + received %d != %d", o.Missed, o.Received, each-cc.n0)
		}
		if B.Outcome().Received != 0 || !B.Done() {
			t.Fatal("one-way responder received blocks")
		}
	}
}

// TestHostileSession: a responder fed bad filters fails with the right error and a
// reject message, and never panics.
func TestHostileSession(t *testing.T) {
	uv, _ := NewUniverse(100)
	held, _ := SetOf(100, 1, 2, 3, 50)
	good := func(t *testing.T, cfg Config) Message {
		s, err := NewSession(5, cfg, uv, held, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s.Ready()[0]
	}
	cfg := Config{}
	tests := []struct {
		name   string
		cfg    Config // responder's
		mutate func(*Message)
		want   error
	}{
		{"other seed", Config{Seed: 1}, func(*Message) {}, cbfalgebra.ErrNotHomologous},
		{"other hash", Config{Hash: cbfalgebra.HashSHA1}, func(*Message) {}, cbfalgebra.ErrNotHomologous},
		{"other r", Config{R: 8}, func(*Message) {}, cbfalgebra.ErrNotHomologous},
		{"other m", Config{M: 1 << 12}, func(*Message) {}, cbfalgebra.ErrNotHomologous},
		{"params lie about k", cfg, func(m *Message) { m.Filter.Params.K++ }, cbfalgebra.ErrNotHomologous},
		{"params lie about m", cfg, func(m *Message) { m.Filter.Params.M *= 2 }, cbfalgebra.ErrNotHomologous},
		{"corrupt filter", cfg, func(m *Message) { m.Filter.Data = bytes.Clone(m.Filter.Data); m.Filter.Data[40] ^= 1 }, cbfalgebra.ErrCorrupt},
		{"truncated filter", cfg, func(m *Message) { m.Filter.Data = m.Filter.Data[:len(m.Filter.Data)-3] }, cbfalgebra.ErrCorrupt},
		{"other universe", cfg, func(m *Message) { m.Filter.Universe = 99 }, ErrUniverse},
		{"other method", cfg, func(m *Message) { m.Filter.Method = Byers }, ErrMethod},
		{"other session", cfg, func(m *Message) { m.Session = 6 }, ErrState},
		{"offer first", cfg, func(m *Message) { *m = Message{Type: MsgOffer, Session: 5} }, ErrState},
		{"reject", cfg, func(m *Message) { *m = Message{Type: MsgReject, Session: 5, Reason: "no"} }, ErrRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good(t, cfg)
			tc.mutate(&m)
			s, err := NewSession(5, tc.cfg, uv, held, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Step(m)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !s.Done() || s.Err() == nil {
				t.Fatal("session not over after an error")
			}
			if tc.want != ErrRejected {
				out := s.Ready()
				if len(out) != 1 || out[0].Type != MsgReject {
					t.Fatalf("no reject queued: %+v", out)
				}
				if _, err := out[0].MarshalBinary(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Step(m); err == nil {
				t.Fatal("failed session accepts more messages")
			}
		})
	}

	// an offer with an index outside the universe
	a, _ := NewSession(5, cfg, uv, held, nil)
	b, _ := NewSession(5, cfg, uv, held, nil)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	for _, m := range a.Ready() {
		if err := b.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	b.Ready()
	if err := a.Step(Message{Type: MsgOffer, Session: 5, Indices: []uint32{1000, 3}}); !errors.Is(err, ErrIndex) {
		t.Fatalf("offer outside universe: %v", err)
	}
}

func TestConfigParams(t *testing.T) {
	tests := []struct {
		cfg  Config
		n    int
		want cbfalgebra.Params
	}{
		{Config{}, 4000, cbfalgebra.Params{M: 32768, K: 6, R: 4}},
		{Config{}, 0, cbfalgebra.Params{M: 8, K: 6, R: 4}},
		{Config{BitsPerElement: 16}, 1000, cbfalgebra.Params{M: 16384, K: 11, R: 4}},
		{Config{M: 1000, K: 3, R: 8, Seed: 4}, 50, cbfalgebra.Params{M: 1000, K: 3, R: 8, Seed: 4}},
		{Config{Method: Byers}, 5595, cbfalgebra.Params{M: 65536, K: 8, R: 1}},
		{Config{Method: Byers, M: 32768, K: 6}, 5595, cbfalgebra.Params{M: 32768, K: 6, R: 1}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.cfg, tc.n), func(t *testing.T) {
			got, err := tc.cfg.Params(tc.n)
			if err != nil || got != tc.want {
				t.Fatalf("Params(%d) = %v, %v; want %v", tc.n, got, err, tc.want)
			}
		})
	}
	if _, err := (Config{Hash: cbfalgebra.HashSHA1, M: 1000}).Params(10); err == nil {
		t.Fatal("sha1 with m not a power of two accepted")
	}
	if _, err := (Config{BitsPerElement: -1}).Params(10); err == nil {
		t.Fatal("negative bits per element accepted")
	}
}

func TestSet(t *testing.T) {
	s, err := SetOf(130, 0, 64, 129, 64)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 3 || !s.Has(64) || s.Has(1) || s.Has(-1) || s.Has(130) {
		t.Fatalf("set %v", s.Indices())
	}
	if got := s.Indices(); fmt.Sprint(got) != "[0 64 129]" {
		t.Fatalf("Indices = %v", got)
	}
	o, _ := SetOf(130, 64)
	if s.Difference(o) != 2 || o.Difference(s) != 0 {
		t.Fatal("Difference")
	}
	c := s.Clone()
	c.Add(5)
	if s.Has(5) || c.Len() != 4 {
		t.Fatal("Clone shares state")
	}
	if _, err := SetOf(10, 10); !errors.Is(err, ErrIndex) {
		t.Fatalf("SetOf outside: %v", err)
	}
}

// FuzzSessionStep feeds arbitrary bytes, decoded, to a responder and to an
// initiator waiting for an answer: errors are fine, panics are not.
func FuzzSessionStep(f *testing.F) {
	uv, _ := NewUniverse(300)
	held, _ := SetOf(300, 1, 2, 3, 200, 299)
	for _, m := range sampleMessages(f) {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	for _, method := range AllMethods {
		s, _ := NewSession(0, Config{Method: method}, uv, held, nil)
		_ = s.Start()
		for _, m := range s.Ready() {
			b, _ := m.MarshalBinary()
			f.Add(b)
		}
	}
	lim := Limits{MaxMessage: 1 << 16, MaxFilterBytes: 1 << 14}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b, lim)
		if err != nil {
			return
		}
		for _, method := range AllMethods {
			cfg := Config{Method: method, Limits: lim}
			r, _ := NewSession(m.Session, cfg, uv, held, NewMemBlocks(300, 4))
			_ = r.Step(m)
			r.Ready()
			i, _ := NewSession(m.Session, cfg, uv, held, NewMemBlocks(300, 4))
			if err := i.Start(); err != nil {
				t.Fatal(err)
			}
			i.Ready()
			_ = i.Step(m)
			i.Ready()
		}
	})
}

func TestFiltersCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	uv, _ := NewUniverse(2000)
	a, b := splitSets(rng, 2000, 1200, 1200, 400)
	for _, method := range AllMethods {
		fa, err := NewFilters(uv, a)
		if err != nil {
			t.Fatal(err)
		}
		fb, _ := NewFilters(uv, b)
		for trial := range 3 { // the cache serves every session the same
			cold := Config{Method: method}
			warmA, warmB := cold, cold
			warmA.Filters, warmB.Filters = fa, fb
			A1, _ := NewSession(1, cold, uv, a, nil)
			B1, _ := NewSession(1, cold, uv, b, nil)
			A2, err := NewSession(1, warmA, uv, a, nil)
			if err != nil {
				t.Fatal(err)
			}
			B2, _ := NewSession(1, warmB, uv, b, nil)
			if err := Run(A1, B1, Limits{}); err != nil {
				t.Fatal(err)
			}
			if err := Run(A2, B2, Limits{}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(A1.Wanted(), B1.Wanted()) != fmt.Sprint(A2.Wanted(), B2.Wanted()) {
				t.Fatalf("%v trial %d: prebuilt filters change the result", method, trial)
			}
		}
		// a cache for another set is refused
		if _, err := NewSession(1, Config{Method: method, Filters: fa}, uv, b, nil); !errors.Is(err, ErrUniverse) {
			t.Fatalf("filters of another set accepted: %v", err)
		}
	}
}

// TestBuildCBF: the complement route builds exactly the CBF that inserting every
// block builds, for sets on both sides of half the universe.
func TestBuildCBF(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, u := range []int{1, 63, 64, 65, 1000, 4097} {
		uv, _ := NewUniverse(u)
		p := cbfalgebra.Params{M: 2048, K: 4, R: 4}
		loc, err := uv.locator(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, u / 3, u / 2, u/2 + 1, u - 1, u} {
			s := NewSet(u)
			for _, i := range rng.Perm(u)[:n] {
				s.Add(i)
			}
			got, err := buildCBF(uv, p, loc, s, s.Indices())
			if err != nil {
				t.Fatal(err)
			}
			want, _ := cbfalgebra.NewFromParams(p)
			for _, i := range s.Indices() {
				want.InsertLocations(loc.at(i))
			}
			if full, _ := uv.Filter(p); full.Saturated() > 0 {
				continue // only an upper bound then
			}
			if eq, err := cbfalgebra.Equal(got, want); err != nil || !eq {
				t.Fatalf("u=%d n=%d: complement build differs", u, n)
			}
		}
	}
}

// FuzzStepRaw builds messages field by field, without the decoder's checks (as a
// caller of Step might), and feeds them to sessions in every state: no panics.
func FuzzStepRaw(f *testing.F) {
	f.Add(uint8(2), uint16(4), []byte{1, 0, 0, 0, 0xff, 0xff, 0, 0}, []byte("abcdefgh"))
	f.Add(uint8(3), uint16(4), []byte{9, 0, 0, 0, 1, 0, 0, 0}, []byte("abcdefgh"))
	f.Add(uint8(1), uint16(0), []byte{}, []byte("RCBF"))
	uv, _ := NewUniverse(300)
	held, _ := SetOf(300, 1, 2, 3, 200, 299)
	f.Fuzz(func(t *testing.T, typ uint8, size uint16, idx []byte, data []byte) {
		m := Message{Type: MsgType(typ % 8), Cells: int(size), BlockSize: int(size), Data: data, Reason: string(data)}
		for j := 0; j+4 <= len(idx); j += 4 {
			m.Indices = append(m.Indices, uint32(idx[j])|uint32(idx[j+1])<<8|uint32(idx[j+2])<<16|uint32(idx[j+3])<<24)
		}
		m.Filter = FilterMsg{Method: Method(size % 7), Universe: 300, SetSize: int(size), Reply: size%2 == 0, Data: data,
			Params: cbfalgebra.Params{M: int(size), K: int(typ % 9), R: int(typ % 17), Hash: cbfalgebra.HashFamily(typ % 3)}}
		for _, method := range AllMethods {
			for _, store := range []Blocks{nil, NewMemBlocks(300, 4)} {
				cfg := Config{Method: method}
				r, _ := NewSession(0, cfg, uv, held, store)
				_ = r.Step(m)
				r.Ready()
				i, _ := NewSession(0, cfg, uv, held, store)
				if err := i.Start(); err != nil {
					t.Fatal(err)
				}
				i.Ready()
				_ = i.Step(m)
				for _, out := range i.Ready() {
					if _, err := out.MarshalBinary(); err != nil {
						t.Fatalf("session emitted an unencodable message: %v", err)
					}
				}
			}
		}
	})
}

// TestConcurrentSessions shares one Universe and one Filters between sessions on
// several goroutines (run with -race).
func TestConcurrentSessions(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	uv, _ := NewUniverse(3000)
	a, b := splitSets(rng, 3000, 2000, 2000, 1000)
	fb, _ := NewFilters(uv, b)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			cfg := Config{M: 1 << 14, K: 5 + g%2}
			cfgB := cfg
			cfgB.Filters = fb
			A, _ := NewSession(uint64(g), cfg, uv, a, nil)
			B, _ := NewSession(uint64(g), cfgB, uv, b, nil)
			err := Run(A, B, Limits{})
			if err == nil && A.Outcome().Missed != 0 {
				err = fmt.Errorf("missed %d", A.Outcome().Missed)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSizingWithStore: a side holding n = 1000 of u = 20000 blocks sizes its filter
// for n when the answer is an offer or its blocks are tiny, and for u - n when the
// answer carries blocks worth more than the larger filter: a filter sized for n
// saturates ~CBF(S_A) and every held block would come back as payload (990 of 990
// shared); sized for u - n about n0 * FP(u - n) do.
func TestSizingWithStore(t *testing.T) {
	const u, n, shared = 20000, 1000, 990
	rng := rand.New(rand.NewPCG(21, 22))
	uv, _ := NewUniverse(u)
	for _, tc := range []struct{ blockSize, sizedFor int }{{0, n}, {8, n}, {256, u - n}} {
		a, b := splitSets(rng, u, n, n, shared)
		var sa, sb Blocks
		if tc.blockSize > 0 {
			sa, sb = storeOf(a, tc.blockSize), storeOf(b, tc.blockSize)
		}
		cfg := Config{OneWay: true, Seed: rng.Uint64()}
		A, _ := NewSession(1, cfg, uv, a, sa)
		B, _ := NewSession(1, cfg, uv, b, sb)
		if err := Run(A, B, Limits{}); err != nil {
			t.Fatal(err)
		}
		o := A.Outcome()
		want, _ := Config{}.Params(tc.sizedFor)
		want.Seed = cfg.Seed
		if o.Params != want {
			t.Fatalf("blocks of %d B: params %v, want %v", tc.blockSize, o.Params, want)
		}
		if o.Missed != 0 {
			t.Fatalf("blocks of %d B: missed %d", tc.blockSize, o.Missed)
		}
		expect := shared * cbfalgebra.FP(o.Params.M, o.Params.K, u-n)
		t.Logf("blocks of %d B: %v, redundant %d (expected %.1f), %d bytes", tc.blockSize, o.Params, o.Redundant, expect, o.WireBytes())
		if float64(o.Redundant) > expect+5*math.Sqrt(expect)+1 {
			t.Fatalf("redundant %d, expected %.1f", o.Redundant, expect)
		}
	}
}

func TestRandomSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct{ u, shared, na, nb int }{{10, 0, 0, 0}, {10, 3, 5, 8}, {100, 50, 50, 50}, {7, 0, 3, 4}} {
		a, b, err := RandomSplit(rng, tc.u, tc.shared, tc.na, tc.nb)
		if err != nil {
			t.Fatal(err)
		}
		if a.Len() != tc.na || b.Len() != tc.nb || a.Len()-a.Difference(b) != tc.shared {
			t.Fatalf("%+v: |A| = %d, |B| = %d, |A ∩ B| = %d", tc, a.Len(), b.Len(), a.Len()-a.Difference(b))
		}
	}
	for _, tc := range []struct{ u, shared, na, nb int }{{10, 4, 3, 8}, {10, 0, 6, 5}, {10, -1, 2, 2}} {
		if _, _, err := RandomSplit(rng, tc.u, tc.shared, tc.na, tc.nb); !errors.Is(err, ErrUniverse) {
			t.Fatalf("%+v: %v", tc, err)
		}
	}
}

// A peer may not choose k freely: an honest filter with k above MaxPeerK is
// refused by a responder that leaves K open, and accepted by one that pins it.
func TestPeerKCap(t *testing.T) {
	uv, _ := NewUniverse(100)
	held, _ := SetOf(100, 1, 2, 3, 50)
	a, err := NewSession(5, Config{K: MaxPeerK + 1}, uv, held, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	msg := a.Ready()[0]
	open, _ := NewSession(5, Config{}, uv, held, nil)
	if err := open.Step(msg); !errors.Is(err, cbfalgebra.ErrInvalidParams) {
		t.Errorf("k=%d with K open: err = %v, want ErrInvalidParams", MaxPeerK+1, err)
	}
	pinned, _ := NewSession(5, Config{K: MaxPeerK + 1}, uv, held, nil)
	if err := pinned.Step(msg); err != nil {
		t.Errorf("k=%d with K pinned to it: %v", MaxPeerK+1, err)
	}
}

// TestPeerFilter: a responder made with KeepPeerFilter keeps a copy of the
// CBF the initiator sent, holding every block of the initiator's set (it
// survives the subtraction done over the received filter); without the
// option it keeps none.
func TestPeerFilter(t *testing.T) {
	u, err := NewUniverse(200)
	if err != nil {
		t.Fatal(err)
	}
	a, b := NewSet(200), NewSet(200)
	for i := range 100 {
		a.Add(i)
		b.Add(i + 50)
	}
	for _, keep := range []bool{true, false} {
		init, err := NewSession(1, Config{OneWay: true}, u, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := NewSession(1, Config{OneWay: true, KeepPeerFilter: keep}, u, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := init.Start(); err != nil {
			t.Fatal(err)
		}
		for _, m := range init.Ready() {
			if err := resp.Step(m); err != nil {
				t.Fatal(err)
			}
		}
		pf := resp.PeerFilter()
		if !keep {
			if pf != nil {
				t.Fatal("a peer filter kept without KeepPeerFilter")
			}
			continue
		}
		if pf == nil {
			t.Fatal("no peer filter kept")
		}
		var key []byte
		for _, i := range a.Indices() {
			if !pf.Contains(BlockKey(key[:0], i)) {
				t.Fatalf("the kept filter lacks block %d of the initiator's set", i)
			}
		}
		if pf.Len() != a.Len() {
			t.Errorf("the kept filter holds %d elements, the initiator %d", pf.Len(), a.Len())
		}
	}
}
