package testnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/reconcile"
	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
	"github.com/reconcile-p2p/reconcile/testnet/natmodel"
)

// natRun runs 12 peers of a 2 MiB file over access links with nat.
func runNAT(t *testing.T, nat natmodel.Config, blockSize int) (*Result, error) {
	t.Helper()
	const nodes, size = 12, 2 << 20
	cfg := Config{Nodes: nodes, Size: size, BlockSize: blockSize, Method: reconcile.Complete, Topology: topology.Small(),
		Dir: t.TempDir(), Seed: 3, Up: 4e6, Down: 20e6, MaxSources: nodes, Timeout: time.Minute, NAT: nat}
	res, err := Run(context.Background(), cfg)
	if res != nil && res.NAT != nil {
		f := res.NAT
		t.Logf("nat %+v: median %.2fx T*, pairs %v, relays carried %d B (%d of blocks, %.1f%% of the block bytes), fetches saw %d relayed, circuits %+v",
			nat, res.MedianTStar, f.Pairs, f.Circuits.Bytes, f.RelayedBlockBytes, 100*f.RelayedShare, f.FetchRelayedBytes, f.Circuits)
	}
	return res, err
}

// TestRunNAT runs NATed swarms: whatever the punches and relays, every
// peer ends byte-identical; with every punch succeeding nothing is
// relayed; with none succeeding every NATed pair's bytes cross a relay, and
// the fetches see those connections as relayed.
func TestRunNAT(t *testing.T) {
	for _, tc := range []struct {
		name string
		nat  natmodel.Config
		// allRelayed: every pair is relayed, so every block byte.
		allRelayed, noneRelayed bool
	}{
		{"every punch succeeds", natmodel.Config{Share: 0.5, Punch: 1, Relays: 2, Limits: natmodel.DefaultLimits}, false, true},
		{"every peer NATed, no punch", natmodel.Config{Share: 1, Punch: 0, Relays: 2}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runNAT(t, tc.nat, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := res.NAT
			if res.Completed != res.Fetchers || res.Identical != res.Checked || res.Checked != 12 {
				t.Errorf("%d of %d completed, %d of %d identical", res.Completed, res.Fetchers, res.Identical, res.Checked)
			}
			if f == nil || f.NATed != int(tc.nat.Share*12) {
				t.Fatalf("figures %+v, want %d NATed", f, int(tc.nat.Share*12))
			}
			switch {
			case tc.noneRelayed:
				if f.Circuits.Bytes != 0 || f.Pairs["relayed"] != 0 || f.Pairs["punched"] == 0 || f.FetchRelayedBytes != 0 {
					t.Errorf("every punch succeeded, yet %+v", f)
				}
			case tc.allRelayed:
				if f.Pairs["relayed"] != res.Links || f.RelayedBlockBytes != res.BlockBytes || f.RelayedShare < 1 ||
					f.FetchRelayedBytes != res.BlocksReceived*int64(res.BlockSize) {
					t.Errorf("every pair relayed, yet %+v (links %d, block bytes %d, blocks received %d)", f, res.Links, res.BlockBytes, res.BlocksReceived)
				}
			}
			if res.Completions[0] < res.TStarS {
				t.Errorf("a fetcher finished in %.3f s, before T* = %.3f s", res.Completions[0], res.TStarS)
			}
		})
	}
}

// TestRunNATRelayLimit: a relay ends a circuit at its data limit (the
// peers then open another), and no circuit carries more than the limit
// each way; the peers still end byte-identical.
func TestRunNATRelayLimit(t *testing.T) {
	const limit = 512 << 10
	res, err := runNAT(t, natmodel.Config{Share: 1, Punch: 0, Relays: 1, Limits: natmodel.Limits{Data: limit}}, 64<<10)
	if err != nil && !errors.Is(err, ErrIncomplete) {
		t.Fatal(err)
	}
	c := res.NAT.Circuits
	if c.DataLimited == 0 || c.Opened <= int64(res.NAT.Pairs["relayed"])/2 || c.Bytes > 2*limit*c.Opened {
		t.Errorf("circuits %+v of %d relayed pairs: want some ended by the limit, none over it", c, res.NAT.Pairs["relayed"])
	}
	if res.Identical != res.Checked || res.Completed != res.Fetchers {
		t.Errorf("%d of %d completed, %d of %d identical: %v", res.Completed, res.Fetchers, res.Identical, res.Checked, err)
	}
}

// TestRunNATConfigErrors: NAT settings out of range, or NATs on real
// sockets, are refused with ErrConfig naming what is wrong.
func TestRunNATConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{NAT: natmodel.Config{Share: 1.1, Punch: 0.7}}, "NAT share 1.1 not in [0, 1]"},
		{Config{NAT: natmodel.Config{Share: 0.5, Punch: -0.1}}, "punch success -0.1 not in [0, 1]"},
		{Config{NAT: natmodel.Config{Share: 0.5, Relays: -2}}, "-2 relays"},
		{Config{NAT: natmodel.Config{Share: 0.5}, Transport: TransportTCP}, "mock transport only"},
	} {
		cfg := tc.cfg
		cfg.Nodes, cfg.Dir = 4, dir
		_, err := Run(context.Background(), cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want ErrConfig saying %q", tc.cfg.NAT, err, tc.want)
		}
	}
}
