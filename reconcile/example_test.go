package reconcile_test

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// A two-party complete reconciliation over a file of 1000 blocks: A holds 0..599,
// B holds 400..999. After one exchange both hold all 1000 and nothing was missed.
func Example() {
	u, _ := reconcile.NewUniverse(1000)
	a, b := reconcile.NewSet(1000), reconcile.NewSet(1000)
	for i := range 600 {
		a.Add(i)
		b.Add(999 - i)
	}
	cfg := reconcile.Config{Method: reconcile.Complete} // m, k chosen from |S|
	sa, _ := reconcile.NewSession(7, cfg, u, a, nil)
	sb, _ := reconcile.NewSession(7, cfg, u, b, nil)

	// Run drives both engines in memory through the codec; over a network each
	// side calls reconcile.Drive (see ExampleDrive).
	if err := reconcile.Run(sa, sb, reconcile.DefaultLimits); err != nil {
		panic(err)
	}
	oa, ob := sa.Outcome(), sb.Outcome()
	fmt.Println("params:", oa.Params)
	fmt.Println("A holds", sa.Held().Len(), "B holds", sb.Held().Len())
	fmt.Println("A got", len(sa.Wanted()), "new blocks; B got", len(sb.Wanted()))
	fmt.Println("redundant at most a few:", oa.Redundant < 10, ob.Redundant < 10)
	// Output:
	// params: m=8192 k=9 r=4 hash=fast seed=0
	// A holds 1000 B holds 1000
	// A got 400 new blocks; B got 400
	// redundant at most a few: true true
}

// The exact methods: a bitfield and a rateless IBLT deliver exactly the blocks A
// lacks, nothing redundant; the IBLT's traffic follows the difference (here 20
// blocks of a 10000-block file) instead of the file.
func Example_exactMethods() {
	u, _ := reconcile.NewUniverse(10000)
	a, b := reconcile.NewSet(10000), reconcile.NewSet(10000)
	for i := range 10000 {
		if i >= 10 {
			a.Add(i) // A lacks 0..9
		}
		if i < 9990 {
			b.Add(i) // B lacks 9990..9999
		}
	}
	for _, name := range []string{"bitfield", "iblt"} {
		m, _ := reconcile.ParseMethod(name)
		cfg := reconcile.Config{Method: m, OneWay: true}
		sa, _ := reconcile.NewSession(1, cfg, u, a, nil)
		sb, _ := reconcile.NewSession(1, cfg, u, b, nil)
		if err := reconcile.Run(sa, sb, reconcile.Limits{}); err != nil {
			panic(err)
		}
		o := sa.Outcome()
		fmt.Printf("%s: wanted %v, redundant %d, %d bytes of filters\n",
			m, sa.Wanted(), o.Redundant, o.WireSent[reconcile.MsgFilter])
	}
	// Output:
	// bitfield: wanted [0 1 2 3 4 5 6 7 8 9], redundant 0, 1270 bytes of filters
	// iblt: wanted [0 1 2 3 4 5 6 7 8 9], redundant 0, 504 bytes of filters
}
