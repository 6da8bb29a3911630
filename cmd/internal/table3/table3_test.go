package table3

import (
	"context"
	"fmt"
	"testing"
)

func small() Config {
	return Config{Trials: 3, Seed: 7, BlockSize: 64, N: 300, N0s: []int{200, 50}, M: 2048, K: 5, NN: 1023}
}

func TestRunSmall(t *testing.T) {
	rows, err := Run(context.Background(), small())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.KK != 600-r.N0 || r.TimeMS <= 0 || r.WireBytes <= 0 {
			t.Fatalf("row %+v", r)
		}
		switch r.Method {
		case "complete":
			if r.Missed != 0 || r.DecodeSuccess != 1 || r.DecodeMS != 0 || r.ExpectedRedundant <= 0 {
				t.Fatalf("complete row %+v", r)
			}
		case "byers":
			if r.Redundant != 0 || r.DecodeSuccess != 1 || r.DecodeMS <= 0 || r.DecodeMS > r.TimeMS || r.ExpectedMissed <= 0 {
				t.Fatalf("byers row %+v", r)
			}
		default:
			t.Fatalf("method %q", r.Method)
		}
	}
	// deterministic for a seed (timings aside)
	again, err := Run(context.Background(), small())
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		a, b := rows[i], again[i]
		if a.Missed != b.Missed || a.Redundant != b.Redundant || a.WireBytes != b.WireBytes {
			t.Fatalf("row %d differs between runs: %+v vs %+v", i, a, b)
		}
	}
}

func TestRunErrors(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.Trials = 0 },
		func(c *Config) { c.N0s = []int{400} },
		func(c *Config) { c.BlockSize = 65 }, // Leopard needs multiples of 64
	} {
		c := small()
		mut(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, small()); err == nil {
		t.Fatal("cancelled run succeeded")
	}
}

func Example() {
	cfg := Config{Trials: 2, Seed: 1, BlockSize: 64, N: 200, N0s: []int{100}, M: 2048, K: 6, NN: 511}
	rows, err := Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Printf("%s kk=%d n0=%d missed=%.0f decoded=%.0f%%\n", r.Method, r.KK, r.N0, r.Missed, 100*r.DecodeSuccess)
	}
	// Output:
	// complete kk=300 n0=100 missed=0 decoded=100%
	// byers kk=300 n0=100 missed=10 decoded=100%
}
