package labbench

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// TestSwarmCommand runs bench swarm in a short form (3 fetchers, 2 MiB, no
// caps) and checks that every fetcher is reported, that the uploads in the
// report add up to what the fetchers received, and that the fetchers served
// each other. It checks no time: the timing goal is the command's.
func TestSwarmCommand(t *testing.T) {
	bin := e2eBinary(t)
	cmd := exec.Command(bin, "bench", "swarm", "--fetchers", "3", "--size", "2MiB", "--block-size", "64KiB", "--rate", "0", "--seed-rate", "0", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench swarm: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	var rep swarmReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Fetchers != 3 || rep.Bytes != 2<<20 || rep.Bound != 0 || len(rep.Runs) != 1 {
		t.Fatalf("report of another run: %+v", rep)
	}
	run := rep.Runs[0]
	if len(run.Each) != 3 {
		t.Fatalf("%d fetchers reported, want 3", len(run.Each))
	}
	var fromSeed, uploaded int64
	for _, f := range run.Each {
		if f.Seconds <= 0 || f.Seconds > run.Wall || f.CPU <= 0 || f.ID == "" {
			t.Errorf("fetcher %+v", f)
		}
		fromSeed += f.FromSeed
		uploaded += f.Uploaded
	}
	// The blocks of every fetcher came from the seed or another fetcher
	// (redundant ones, sent twice, count twice).
	if got := run.SeedUploaded + run.FetchersUploaded; got < 3*rep.Bytes || got > 3*rep.Bytes+int64(run.Redundant)*rep.BlockSize || fromSeed != run.SeedUploaded || uploaded != run.FetchersUploaded {
		t.Errorf("seed %d + fetchers %d bytes (from seed %d, uploaded %d), want %d in all", run.SeedUploaded, run.FetchersUploaded, fromSeed, uploaded, 3*rep.Bytes)
	}
	if run.FetchersUploaded == 0 {
		t.Error("the fetchers served each other nothing")
	}
	if run.Median < run.Min || run.Max < run.Median || run.CPU <= 0 || run.CPUShare <= 0 {
		t.Errorf("run %+v", run)
	}
}

// TestSwarmBound: the fluid bound of the caps, and none without a seed cap.
func TestSwarmBound(t *testing.T) {
	r := swarmReport{Bytes: 32 << 20, Fetchers: 20, Rate: 2 << 20, SeedRate: 4 << 20}
	r.setBound()
	if r.BoundSeed != 8 || r.Bound != r.BoundSwarm || r.BoundSwarm < 14.545 || r.BoundSwarm > 14.546 {
		t.Errorf("bound %+v, want max(8 s, 20*32/44 s = 14.545 s)", r)
	}
	r = swarmReport{Bytes: 32 << 20, Fetchers: 20, SeedRate: 4 << 20}
	r.setBound()
	if r.Bound != 8 || r.BoundSwarm != 0 {
		t.Errorf("bound without fetcher caps %+v, want F/u_seed = 8 s", r)
	}
	r = swarmReport{Bytes: 32 << 20, Fetchers: 20, Rate: 2 << 20}
	if r.setBound(); r.Bound != 0 {
		t.Errorf("bound without a seed cap %v, want none", r.Bound)
	}
}

// TestMachineTicks reads the cpu line of /proc/stat.
func TestMachineTicks(t *testing.T) {
	busy, total, ok := machineTicks("cpu  100 5 50 800 40 3 2 0 0 0")
	if !ok || busy != 160 || total != 1000 {
		t.Errorf("machineTicks = %v, %v, %v; want 160, 1000, true", busy, total, ok)
	}
	if _, _, ok := machineTicks("cpu0 1 2 3"); ok {
		t.Error("a short line parsed")
	}
}
