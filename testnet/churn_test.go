package testnet

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
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
			res, err := Run(context.Background(), Config{Nodes: nodes, Size: 1 << 20, BlockSize: 64 << 10, Hold: tc.hold,
				Churn: tc.churn, Liars: tc.liars, LiarKind: tc.kind, Topology: ts.Small(), Dir: t.TempDir(), Seed: 3,
				Up: 8e6, Down: 16e6, Method: reconcile.Complete})
			if err != nil {
				t.Fatalf("%v (result %+v)", err, res)
			}
			t.Logf("fetchers %d completed %d checked %d identical %d; left %d rejoined %d late %d resumed %d; liars %d (%d corrupt, %d phantom): lied %d corrupt %d missing, received %d corrupt, %d bans (%d honest); median %.2f max %.2f s, T* %.2f s",
				res.Fetchers, res.Completed, res.Checked, res.Identical, res.Left, res.Rejoined, res.LateJoined, res.ResumedBlocks,
				res.Liars, res.CorruptLiars, res.PhantomLiars, res.LiedCorrupt, res.LiedMissing, res.CorruptReceived, res.Bans, res.HonestBans,
				res.MedianS, res.MaxS, res.TStarS)
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
