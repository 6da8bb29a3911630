package testnet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
	"github.com/reconcile-p2p/reconcile/reconcile"
	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// TestRunTrees runs complete reconciliation's fetches with the peers placed
// in stripe trees (peer.Service.Push) over the testnet's network
// (transit-stub latencies, access links): every fetcher ends byte-identical
// after no fetcher before T*, the seed uploads one copy, and every block
// comes down the trees once, in every case of trees against peers.
func TestRunTrees(t *testing.T) {
	const nodes, size = 12, 1 << 20
	for _, k := range []int{1, 3, 20} {
		cfg := Config{Nodes: nodes, Size: size, BlockSize: 64 << 10, Up: 4e6, Down: 20e6, Trees: k, Method: reconcile.Complete,
			Topology: topology.Small(), Dir: t.TempDir(), Seed: 5, Timeout: time.Minute}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%d trees: %v", k, err)
		}
		t.Logf("%s: T* %.2f s, median %.2fx p95 %.2fx max %.2fx, seed out at %.2f s, %d of %d blocks pushed, %d twice", res.Method, res.TStarS,
			res.MedianTStar, res.P95TStar, res.MaxTStar, res.SeedOutS, res.Pushed, res.BlocksReceived, res.Redundant)
		if res.Method != fmt.Sprintf("complete-trees-%d", k) {
			t.Errorf("%d trees: method %q", k, res.Method)
		}
		if res.Completed != nodes-1 || res.Identical != nodes || len(res.Errors) != 0 {
			t.Fatalf("%d trees: %d completed, %d identical, errors %v", k, res.Completed, res.Identical, res.Errors)
		}
		if res.Completions[0] < res.TStarS || res.SeedOutS < res.TStarS-1e-6 {
			t.Errorf("%d trees: first completion %.3f s, seed out %.3f s, T* %.3f s", k, res.Completions[0], res.SeedOutS, res.TStarS)
		}
		if res.SeedSentBytes < size || k > 1 && res.SeedSentBytes > size+size/10 {
			t.Errorf("%d trees: the seed sent %d bytes of a %d-byte file", k, res.SeedSentBytes, size)
		}
		// Every block pushed once: nothing is repaired without churn or
		// liars. (One tree is a chain of 11 peers, whose last wait longer
		// than the repair time at these latencies: they repair.)
		blocks := int64((nodes - 1) * res.Blocks)
		if k > 1 && (res.Pushed != blocks || res.Redundant != 0) {
			t.Errorf("%d trees: %d of %d blocks pushed, %d twice", k, res.Pushed, blocks, res.Redundant)
		}
	}
}

// TestRunTreesChurnLiars: with peers that leave (some come back, some join
// late) and liars that corrupt what they push and serve, the repair by
// fetching and adoption brings every honest peer the whole file, byte-identical, with
// nothing missed and no honest peer banned, and most blocks still come
// down the trees.
func TestRunTreesChurnLiars(t *testing.T) {
	if testing.Short() {
		t.Skip("testnet run")
	}
	const nodes = 20
	res, err := Run(context.Background(), Config{Nodes: nodes, Size: 1 << 20, BlockSize: 32 << 10, Trees: 4,
		Churn: Churn{Leave: 0.2, Rejoin: 0.1, Late: 0.1}, Liars: 0.2, LiarKind: LiarMixed, Topology: topology.Small(), Dir: t.TempDir(),
		Seed: 3, Up: 8e6, Down: 16e6, Method: reconcile.Complete})
	if err != nil {
		t.Fatalf("%v (result %+v)", err, res)
	}
	t.Logf("completed %d of %d, identical %d of %d; left %d rejoined %d late %d; liars %d: lied %d corrupt %d missing, %d bans (%d honest); %d of %d blocks pushed, %d twice; median %.2fx max %.2fx T*",
		res.Completed, res.Fetchers, res.Identical, res.Checked, res.Left, res.Rejoined, res.LateJoined, res.Liars,
		res.LiedCorrupt, res.LiedMissing, res.Bans, res.HonestBans, res.Pushed, res.BlocksReceived, res.Redundant, res.MedianTStar, res.MaxTStar)
	if res.Completed != res.Fetchers || res.Identical != res.Checked || res.Missed != 0 || res.HonestBans != 0 {
		t.Errorf("%d of %d completed, %d of %d identical, %d missed, %d honest bans", res.Completed, res.Fetchers, res.Identical, res.Checked, res.Missed, res.HonestBans)
	}
	if res.LiedCorrupt+res.LiedMissing == 0 || res.Left == 0 {
		t.Errorf("no lie told (%d, %d) or nobody left (%d)", res.LiedCorrupt, res.LiedMissing, res.Left)
	}
	if res.Pushed == 0 || res.Pushed == res.BlocksReceived {
		t.Errorf("%d of %d blocks pushed: want the trees and the repair both at work", res.Pushed, res.BlocksReceived)
	}
	if res.Adopted == 0 {
		t.Error("no orphan adopted: want the trees repaired by adoption too")
	}
	if res.StayedMaxS <= 0 || res.StayedMaxS > res.MaxS {
		t.Errorf("the peers that never left ended at %.2f s, the last peer at %.2f s", res.StayedMaxS, res.MaxS)
	}
	// A peer that came back was away a while: less that, it ended before
	// the last completion.
	if res.Rejoined == 0 || res.BackMaxS <= 0 || res.BackMaxS >= res.MaxS {
		t.Errorf("%d peers came back, the last ended at %.2f s less its time away, the last peer at %.2f s", res.Rejoined, res.BackMaxS, res.MaxS)
	}
}

// TestStripesOf: every node's place, read from the trees, names the
// parent and the children the trees give it, and a stripe's root takes it
// from the seed.
func TestStripesOf(t *testing.T) {
	const n, k, seed = 9, 3, 4
	var order []int
	for i := range n {
		if i != seed {
			order = append(order, i)
		}
	}
	trees, err := stripes.Plan(stripes.Config{Peers: n, Stripes: k, Order: order, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]lpeer.ID, n)
	for i := range ids {
		ids[i] = lpeer.ID(fmt.Sprint("node", i))
	}
	idx := map[lpeer.ID]int{}
	for i, id := range ids {
		idx[id] = i
	}
	for i := range n {
		st := stripesOf(trees, seed, i, ids, time.Second)
		if len(st.Parents) != k || st.RepairAfter != time.Second {
			t.Fatalf("node %d: %d stripes, repair %v", i, len(st.Parents), st.RepairAfter)
		}
		for s := range k {
			for b := s; b < 3*k; b += k {
				var want []lpeer.ID
				for _, c := range trees.Children(b, i) {
					want = append(want, ids[c])
				}
				if i == seed {
					want = []lpeer.ID{ids[trees.Root(b)]}
				}
				if fmt.Sprint(st.Children[s]) != fmt.Sprint(want) {
					t.Errorf("node %d stripe %d: children %v, want %v", i, s, st.Children[s], want)
				}
			}
			switch {
			case i == seed && st.Parents[s] != "":
				t.Errorf("the seed has a parent in stripe %d", s)
			case i != seed && st.Parents[s] == "":
				t.Errorf("node %d has no parent in stripe %d", i, s)
			case i != seed && trees.Roots[s] == i && st.Parents[s] != ids[seed]:
				t.Errorf("root %d of stripe %d takes it from %v", i, s, st.Parents[s])
			case i != seed && trees.Roots[s] != i && !slices.Contains(trees.Children(s, idx[st.Parents[s]]), int32(i)):
				t.Errorf("node %d stripe %d: parent %v has no such child", i, s, st.Parents[s])
			}
		}
	}
}

// TestBuildTreesLateLeaves checks that the late joiners are leaves of every
// stripe tree (an inner node absent at the start would cut its subtree
// off), while every fetcher still has a place in each tree.
func TestBuildTreesLateLeaves(t *testing.T) {
	const n, k, seed = 40, 4, 0
	for _, classes := range []bool{false, true} {
		cfg := Config{Nodes: n, Trees: k, Latency: LatencyNone}
		up := make([]float64, n)
		for i := range up {
			up[i] = 1e6 * float64(1+i%3)
		}
		if classes {
			cfg.Classes = []ts.AccessClass{{Share: 1}}
		}
		roles := make([]role, n)
		late := []int{3, 17, 29}
		for _, i := range late {
			roles[i].lateAt = 0.3
		}
		trees, err := buildTrees(cfg, nil, &overlay{}, seed, up, 1<<14, roles, rand.New(rand.NewPCG(1, 2)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for s := range k {
			placed := map[int]bool{trees.Roots[s]: true}
			for p, kids := range trees.Kids[s] {
				if len(kids) > 0 && slices.Contains(late, p) {
					t.Errorf("classes %t: late joiner %d has %d children in stripe %d", classes, p, len(kids), s)
				}
				for _, c := range kids {
					placed[int(c)] = true
				}
			}
			if slices.Contains(late, trees.Roots[s]) {
				t.Errorf("classes %t: late joiner %d is stripe %d's root", classes, trees.Roots[s], s)
			}
			if len(placed) != n-1 || placed[seed] {
				t.Errorf("classes %t: stripe %d places %d peers (the seed: %t), want the %d fetchers", classes, s, len(placed), placed[seed], n-1)
			}
		}
	}
}

// TestBuildTreesDirectRoots: with NATs, every stripe's root is a fetcher
// the seed reaches directly (a relay's limits would reset the seed's push
// stream), children go under parents they reach directly where the
// planner finds room (far fewer tree edges through relays than in trees
// drawn blind to the NATs: at most half), and every fetcher keeps its place in each tree.
func TestBuildTreesDirectRoots(t *testing.T) {
	const n, k, seed = 60, 8, 0
	cfg := Config{Nodes: n, Trees: k, Latency: LatencyNone}
	up := make([]float64, n)
	for i := range up {
		up[i] = 1e6
	}
	// Odd fetchers are behind NATs that neither the seed nor each other punch.
	direct := func(a, b int) bool { return a%2 == 0 || b%2 == 0 }
	relayedEdges := func(d func(a, b int) bool) int {
		trees, err := buildTrees(cfg, nil, &overlay{}, seed, up, 1<<14, make([]role, n), rand.New(rand.NewPCG(1, 2)), d)
		if err != nil {
			t.Fatal(err)
		}
		relayed := 0
		for s, root := range trees.Roots {
			if d != nil && !direct(seed, root) {
				t.Errorf("stripe %d's root %d is reached through a relay", s, root)
			}
			placed := map[int]bool{root: true}
			for p, kids := range trees.Kids[s] {
				for _, c := range kids {
					placed[int(c)] = true
					if !direct(p, int(c)) {
						relayed++
					}
				}
			}
			if len(placed) != n-1 {
				t.Errorf("stripe %d places %d fetchers, want %d", s, len(placed), n-1)
			}
		}
		return relayed
	}
	aware, blind := relayedEdges(direct), relayedEdges(nil)
	t.Logf("tree edges through relays: %d aware of the NATs, %d blind", aware, blind)
	if aware*2 > blind {
		t.Errorf("%d tree edges through relays, against %d when the NATs are not known: want at most half", aware, blind)
	}
}
