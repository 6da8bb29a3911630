package testnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer/wire"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// TestRunChurnLiars is the short form of the churn and liar scenarios CI
// runs: peers leave mid-fetch, some come back and resume from their stores,
// some join late, and liars corrupt blocks or offer blocks they never send.
// Every honest peer that stays or comes back must end byte-identical, and
// complete reconciliation must miss nothing.
func TestRunChurnLiars(t *testing.T) {
	if testing.Short() {
		t.Skip("testnet run")
	}
	for _, tc := range []struct {
		name  string
		churn Churn
		liars float64
		kind  LiarKind
		hold  float64
	}{
		{"churn", Churn{Leave: 0.2, Rejoin: 0.1, Late: 0.1}, 0, 0, 0},
		{"liars", Churn{}, 0.2, LiarMixed, 0},
		{"churn+liars hold", Churn{Leave: 0.2, Rejoin: 0.1, Late: 0.1}, 0.2, LiarMixed, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const nodes = 20
			var last Progress
			res, err := Run(context.Background(), Config{Nodes: nodes, Size: 1 << 20, BlockSize: 64 << 10, Hold: tc.hold,
				Churn: tc.churn, Liars: tc.liars, LiarKind: tc.kind, Topology: topology.Small(), Dir: t.TempDir(), Seed: 3,
				Up: 8e6, Down: 16e6, Method: reconcile.Complete, Progress: func(p Progress) { last = p }})
			if err != nil {
				t.Fatalf("%v (result %+v)", err, res)
			}
			// The blocks stored end about where the progress expects them
			// (peers that leave for good stop near their share; a block
			// in flight as one leaves may be stored too).
			if last.Done != res.Fetchers || float64(last.Blocks) < 0.95*float64(last.Need) || float64(last.Blocks) > 1.05*float64(last.Need) {
				t.Errorf("last progress %+v for %d fetchers", last, res.Fetchers)
			}
			t.Logf("fetchers %d completed %d checked %d identical %d; left %d rejoined %d late %d resumed %d; liars %d (%d corrupt, %d phantom): lied %d corrupt %d missing, received %d corrupt, %d bans (%d honest); median %.2f max %.2f s, T* %.2f s; blocks stored %d of %d expected",
				res.Fetchers, res.Completed, res.Checked, res.Identical, res.Left, res.Rejoined, res.LateJoined, res.ResumedBlocks,
				res.Liars, res.CorruptLiars, res.PhantomLiars, res.LiedCorrupt, res.LiedMissing, res.CorruptReceived, res.Bans, res.HonestBans,
				res.MedianS, res.MaxS, res.TStarS, last.Blocks, last.Need)
			if res.Completed != res.Fetchers || res.Identical != res.Checked || res.Missed != 0 {
				t.Errorf("%d of %d completed, %d of %d identical, %d missed", res.Completed, res.Fetchers, res.Identical, res.Checked, res.Missed)
			}
			if res.HonestBans != 0 {
				t.Errorf("%d honest peers banned", res.HonestBans)
			}
			wantLiars := int(tc.liars*float64(nodes-1) + 0.5)
			if tc.hold > 0 {
				wantLiars = int(tc.liars*nodes + 0.5)
			}
			if res.Liars != wantLiars || res.CorruptLiars+res.PhantomLiars != res.Liars {
				t.Errorf("%d liars (%d corrupt, %d phantom), want %d", res.Liars, res.CorruptLiars, res.PhantomLiars, wantLiars)
			}
			if tc.churn != (Churn{}) {
				if res.Left == 0 || res.Rejoined == 0 || res.LateJoined == 0 || res.Rejoined > res.Left {
					t.Errorf("churn: %d left, %d rejoined, %d late", res.Left, res.Rejoined, res.LateJoined)
				}
			}
			if res.Liars > 0 && res.LiedCorrupt+res.LiedMissing == 0 {
				t.Errorf("the liars told no lie")
			}
			// Returners' corrupt blocks after their return are some of
			// those rejected; without liars or returners there are none.
			if res.BackCorrupt < 0 || res.BackCorrupt > res.Rejected || (res.Liars == 0 || res.Rejoined == 0) && res.BackCorrupt != 0 {
				t.Errorf("returners received %d corrupt blocks after coming back, of %d rejected in all (%d liars, %d came back)", res.BackCorrupt, res.Rejected, res.Liars, res.Rejoined)
			}
		})
	}
}

// TestPlanRoles checks who lies and who churns: the counts, the seed never,
// liars never churn, rejoiners are leavers, and the shares drawn in range.
func TestPlanRoles(t *testing.T) {
	for _, tc := range []struct {
		nodes, seed                                int
		liars                                      float64
		kind                                       LiarKind
		churn                                      Churn
		wantLiars, wantLeave, wantRejoin, wantLate int
	}{
		{nodes: 201, seed: 0, liars: 0.1, churn: Churn{0.1, 0.05, 0.05}, wantLiars: 20, wantLeave: 20, wantRejoin: 10, wantLate: 10},
		{nodes: 10, seed: -1, liars: 0.5, kind: LiarPhantom, churn: Churn{1, 1, 0}, wantLiars: 5, wantLeave: 4, wantRejoin: 4},
		{nodes: 3, seed: 1, liars: 0.9, churn: Churn{0.5, 0, 0.5}, wantLiars: 1, wantLeave: 0},
		{nodes: 8, seed: 2},
	} {
		cfg := Config{Nodes: tc.nodes, Liars: tc.liars, LiarKind: tc.kind, Churn: tc.churn}
		roles := planRoles(cfg, tc.seed, rand.New(rand.NewPCG(1, 1)))
		var liars, corrupt, leave, rejoin, late, stable int
		for i, r := range roles {
			if i == tc.seed && r != (role{}) {
				t.Errorf("%+v: the seed has a role %+v", tc, r)
			}
			if r.liar {
				liars++
				if r.lie == LiarCorrupt {
					corrupt++
				}
				if r.leaveAt != 0 || r.lateAt != 0 {
					t.Errorf("%+v: a liar churns: %+v", tc, r)
				}
			}
			if r.leaveAt != 0 {
				leave++
				if r.leaveAt < 0.2 || r.leaveAt > 0.8 || r.pause < 0.5 || r.pause > 1 || r.lateAt != 0 {
					t.Errorf("%+v: leaver %+v", tc, r)
				}
			}
			if r.rejoin {
				rejoin++
			}
			if r.lateAt != 0 {
				late++
				if r.lateAt < 0.1 || r.lateAt > 0.5 {
					t.Errorf("%+v: late joiner %+v", tc, r)
				}
			}
			if r.stable() && i != tc.seed {
				stable++
			}
		}
		if liars != tc.wantLiars || leave != tc.wantLeave || rejoin != tc.wantRejoin || late != tc.wantLate || stable == 0 {
			t.Errorf("%+v: %d liars, %d leave, %d rejoin, %d late, %d stable", tc, liars, leave, rejoin, late, stable)
		}
		switch tc.kind {
		case LiarMixed:
			if corrupt != (liars+1)/2 {
				t.Errorf("%+v: %d of %d liars corrupt, want half", tc, corrupt, liars)
			}
		case LiarPhantom:
			if corrupt != 0 {
				t.Errorf("%+v: %d corrupt liars, want none", tc, corrupt)
			}
		}
	}
}

// recordStream is a network.Stream that keeps what is written to it.
type recordStream struct {
	network.Stream
	got []byte
}

func (s *recordStream) Write(b []byte) (int, error) {
	s.got = append(s.got, b...)
	return len(b), nil
}

// TestLiarStream feeds a liar's stream a missing frame, two block frames
// and an error frame, cut into writes at every place, and reads back what
// it sent: the corrupt liar flips payload bytes of the blocks (so that they
// fail verification) and keeps the rest; the phantom answers every block as
// missing. The writer's buffer is never modified.
func TestLiarStream(t *testing.T) {
	block := bytes.Repeat([]byte{7}, 300)
	var in []byte
	frame := func(f []byte) { in = binary.AppendUvarint(in, uint64(len(f))); in = append(in, f...) }
	frame(wire.AppendMissing(nil, 4))
	frame(append(wire.AppendBlockHeader(nil, 5), block...))
	frame(append(wire.AppendBlockHeader(nil, 200), block[:1]...))
	frame(wire.AppendError(nil, "bye"))
	orig := bytes.Clone(in)
	for _, tc := range []struct {
		lie  LiarKind
		want []string // the frames sent: type and index, or "error"
	}{
		{LiarCorrupt, []string{"missing 4", "corrupt block 5", "corrupt block 200", "error"}},
		{LiarPhantom, []string{"missing 4", "missing 5", "missing 200", "error"}},
	} {
		for cut := range len(in) + 1 {
			rec := &recordStream{}
			c := &counters{}
			s := &liarStream{Stream: rec, lie: tc.lie, c: c}
			for _, part := range [][]byte{in[:cut], in[cut:]} {
				if n, err := s.Write(part); n != len(part) || err != nil {
					t.Fatalf("%v cut %d: write %d of %d, %v", tc.lie, cut, n, len(part), err)
				}
			}
			if !bytes.Equal(in, orig) {
				t.Fatalf("%v cut %d: the writer's bytes were modified", tc.lie, cut)
			}
			var got []string
			r := wire.NewReader(bytes.NewReader(rec.got))
			for {
				f, err := r.Next(1 << 20)
				if err != nil {
					break
				}
				idx, data, ok, err := wire.DecodeBlock(f, 1000)
				switch {
				case err != nil:
					got = append(got, "error")
				case !ok:
					got = append(got, fmt.Sprintf("missing %d", idx))
				case bytes.Equal(data, block[:len(data)]):
					got = append(got, fmt.Sprintf("block %d", idx))
				default:
					got = append(got, fmt.Sprintf("corrupt block %d", idx))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%v cut %d: sent %q, want %q", tc.lie, cut, got, tc.want)
			}
			if lies := c.liedCorrupt.Load() + c.liedMissing.Load(); lies != 2 {
				t.Errorf("%v cut %d: %d lies counted, want 2", tc.lie, cut, lies)
			}
		}
	}
}

func TestParseChurn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Churn
		ok   bool
	}{
		{"", Churn{}, true},
		{"none", Churn{}, true},
		{"0", Churn{}, true},
		{"0.1", Churn{0.1, 0.05, 0.05}, true},
		{" 0.2,0.2,0 ", Churn{0.2, 0.2, 0}, true},
		{"1", Churn{1, 0.5, 0.5}, false}, // leave + late over 1
		{"0.1,0.2,0", Churn{}, false},    // rejoin over leave
		{"0.1,0.05", Churn{}, false},
		{"-0.1", Churn{}, false},
		{"lots", Churn{}, false},
	} {
		got, err := ParseChurn(tc.in)
		if tc.ok != (err == nil) || (tc.ok && got != tc.want) {
			t.Errorf("ParseChurn(%q) = %+v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("ParseChurn(%q): %v is not ErrConfig", tc.in, err)
		}
		if tc.ok {
			back, err := ParseChurn(got.String())
			if err != nil || back != got {
				t.Errorf("ParseChurn(%q).String() = %q reads back as %+v, %v", tc.in, got.String(), back, err)
			}
		}
	}
	for _, tc := range []struct {
		in   string
		want LiarKind
	}{{"", LiarMixed}, {"mixed", LiarMixed}, {"Corrupt", LiarCorrupt}, {"phantom", LiarPhantom}} {
		if got, err := ParseLiarKind(tc.in); err != nil || got != tc.want || (tc.in != "" && got.String() != strings.ToLower(tc.in)) {
			t.Errorf("ParseLiarKind(%q) = %v, %v", tc.in, got, err)
		}
	}
	if _, err := ParseLiarKind("honest"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseLiarKind(honest): %v", err)
	}
	base := Config{Dir: "x", Nodes: 4, Liars: 0.5, Churn: Churn{Leave: 0.5, Rejoin: 0.5, Late: 0.5}}.withDefaults()
	if err := base.validate(); err != nil {
		t.Fatalf("base config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"liars 1", func(c *Config) { c.Liars = 1 }},
		{"liars negative", func(c *Config) { c.Liars = -0.1 }},
		{"liar kind", func(c *Config) { c.LiarKind = 9 }},
		{"byers liars", func(c *Config) { c.Method, c.Liars = reconcile.Byers, 0.1 }},
		{"byers churn", func(c *Config) { c.Method, c.Churn = reconcile.Byers, Churn{Leave: 0.1} }},
		{"churn rejoin", func(c *Config) { c.Churn = Churn{Leave: 0.1, Rejoin: 0.2} }},
	} {
		c := base
		tc.mod(&c)
		if err := c.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: validate = %v, want ErrConfig", tc.name, err)
		}
	}
}
