package testnet_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet"
)

// Eight peers on a small transit-stub network: one seeds a 1 MiB file, the
// others fetch it from their Chord neighbours with complete reconciliation.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "testnet-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	res, err := testnet.Run(context.Background(), testnet.Config{
		Nodes:    8,
		Size:     1 << 20,
		Method:   reconcile.Complete,
		Topology: topology.Small(),
		Dir:      dir,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d fetchers completed, %d of %d files identical\n", res.Completed, res.Fetchers, res.Identical, res.Nodes)
	fmt.Printf("missed blocks: %d; block bytes: %d MiB\n", res.Missed, res.BlockBytes>>20)
	// Output:
	// 7 of 7 fetchers completed, 8 of 8 files identical
	// missed blocks: 0; block bytes: 7 MiB
}

// A churn rate as --churn takes it: 10 % of the fetching peers leave, half of
// them come back, and half as many again join late.
func ExampleParseChurn() {
	c, err := testnet.ParseChurn("0.1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leave %g, rejoin %g, late %g (%s)\n", c.Leave, c.Rejoin, c.Late, c)
	// Output:
	// leave 0.1, rejoin 0.05, late 0.05 (0.1,0.05,0.05)
}
