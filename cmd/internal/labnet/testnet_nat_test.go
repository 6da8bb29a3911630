package labnet

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTestnetNATFlags: the NAT flags are checked with one-line errors that
// name the flag and its range.
func TestTestnetNATFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nat", "1.5"}, "--nat must be a share in [0, 1], got 1.5"},
		{[]string{"--nat", "-0.5"}, "--nat must be a share in [0, 1], got -0.5"},
		{[]string{"--nat", "0.5", "--punch", "1.2"}, "--punch must be a probability in [0, 1], got 1.2"},
		{[]string{"--nat", "0.5", "--punch", "-0.1"}, "--punch must be a probability in [0, 1]"},
		{[]string{"--nat", "0.5", "--relays", "-1"}, "--relays must be 0 or more, got -1"},
		{[]string{"--nat", "0.5", "--relay-duration", "-1s"}, "--relay-duration must be 0"},
		{[]string{"--nat", "0.5", "--relay-data", "lots"}, "--relay-data"},
		{[]string{"--relays", "2"}, "need --nat above 0"},
		{[]string{"--nat", "0.5", "--transport", "tcp"}, "mock transport only"},
	} {
		args := append([]string{"testnet", "--nodes", "4", "--preset", "small"}, tc.args...)
		if _, err := run(t, "", args...); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err = %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

// TestTestnetNAT: a run with NATs and no punch success reports the relayed
// bytes in its lines and its JSON, and every peer ends byte-identical.
func TestTestnetNAT(t *testing.T) {
	args := []string{"testnet", "--peers", "8", "--size", "512KiB", "--block-size", "64KiB", "--preset", "small",
		"--up", "32Mbit", "--down", "160Mbit", "--nat", "1", "--punch", "0", "--relays", "2", "--relay-data", "none"}
	out, err := run(t, "", args...)
	if err != nil || !strings.Contains(out, "8 of 8 peers behind NATs, punches succeed with p = 0; neighbour pairs 0 direct, 0 punched") ||
		!strings.Contains(out, "2 relays, limits no data limit and 2m0s a connection") || !strings.Contains(out, "the relays carried ") {
		t.Fatalf("%v: %s", err, out)
	}
	out, err = runJSON(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rep struct {
		Runs []struct {
			Identical, Checked int
			BlockBytes         int64 `json:"block_bytes"`
			NAT                *struct {
				NATed             int                   `json:"nated"`
				RelayedShare      float64               `json:"relayed_share"`
				RelayedBlockBytes int64                 `json:"relayed_block_bytes"`
				FetchRelayedBytes int64                 `json:"fetch_relayed_bytes"`
				Circuits          struct{ Bytes int64 } `json:"circuits"`
			} `json:"nat"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	r := rep.Runs[0]
	if r.Identical != 8 || r.Checked != 8 || r.NAT == nil || r.NAT.NATed != 8 || r.NAT.RelayedBlockBytes != r.BlockBytes || r.NAT.RelayedShare < 1 ||
		r.NAT.FetchRelayedBytes == 0 || r.NAT.Circuits.Bytes < r.BlockBytes {
		t.Errorf("JSON: %d of %d identical, nat %+v, block bytes %d", r.Identical, r.Checked, r.NAT, r.BlockBytes)
	}
}
