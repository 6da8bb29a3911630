package natmodel_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// Four peers, all behind NATs, no punch succeeds and one relay with the
// go-libp2p defaults: every pair talks through the relay, and a circuit
// ends once 128 KiB have crossed it in one direction.
func Example() {
	m, err := natmodel.New(natmodel.Config{Share: 1, Punch: 0, Relays: 1, Limits: natmodel.DefaultLimits}, 4, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.CountNATed(), m.Path(0, 1), m.Relay(0, 1))

	c := natmodel.NewCircuits(m)
	t0 := time.Unix(0, 0)
	gen := c.Open(0, 1, t0)
	n, err := c.Carry(0, 1, gen, 100<<10, t0)
	fmt.Println(n, err)
	n, err = c.Carry(0, 1, gen, 100<<10, t0)
	fmt.Println(n, errors.Is(err, natmodel.ErrDataLimit))
	gen = c.Open(0, 1, t0) // a new circuit, with a fresh budget
	n, err = c.Carry(0, 1, gen, 100<<10, t0.Add(time.Second))
	fmt.Println(n, err, c.Stats().Opened)
	// Output:
	// 4 relayed 0
	// 102400 <nil>
	// 28672 true
	// 102400 <nil> 2
}
