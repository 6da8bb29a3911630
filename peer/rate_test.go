package peer

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestServeRateWindows: a seed capped with WithServeRate(R) serves a fetcher
// on loopback at R over every window of 2 s, the first included, although it
// sat idle for a second before the fetch began.
//
// The upper bound is one the limiter guarantees, so it is tight: a token
// bucket of b bytes lets at most b + R·t bytes through in any t seconds, and
// b is uploadBurst(R) = R/20, 2.5 % of a 2 s window; the rest of the 5 %
// covers one block's quantisation (64 KiB, 0.8 %) and the moment between a
// block's turn at the limiter and its event. (A bucket of 16 MiB, as before,
// let the first window carry the 4 MiB saved while idle: 50 % over.)
// The lower bound is loose and only after the first second: connecting,
// reconciling and opening the request window take a while, and the fetcher,
// not the limiter, sets the pace on a loaded machine, so it only checks that
// the cap is not far below R.
func TestServeRateWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 6 s")
	}
	const (
		rate   = 4 << 20 // bytes a second
		size   = 20 << 20
		block  = 64 << 10
		window = 2 * time.Second
	)
	type sent struct {
		at time.Time
		n  int
	}
	var mu sync.Mutex
	var events []sent
	dir := t.TempDir()
	_, tk, src := seedFile(t, dir, size, block, WithServeRate(rate), WithServeObserver(func(ev ServeEvent) {
		if ev.Kind == EventBlockSent {
			now := time.Now()
			mu.Lock()
			events = append(events, sent{now, ev.Bytes})
			mu.Unlock()
		}
	}))
	time.Sleep(time.Second) // idle: the limiter's bucket fills
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetcher := newTestPeer(t)
	out := filepath.Join(dir, "out")
	start := time.Now()
	if _, err := fetcher.Fetch(ctx, tk, out); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	sameFile(t, src, filepath.Join(out, "data.bin"))

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, e := range events {
		total += e.n
	}
	if total != size {
		t.Fatalf("served %d bytes, want %d (the file once)", total, size)
	}
	first, last := events[0].at, events[len(events)-1].at
	t.Logf("served %d MiB in %v (fetch %v): %.2f MiB/s, cap %.2f MiB/s", size>>20, last.Sub(first).Round(time.Millisecond), took.Round(time.Millisecond),
		float64(size)/(1<<20)/last.Sub(first).Seconds(), float64(rate)/(1<<20))
	want := float64(rate) * window.Seconds()
	maxGot, minGot := 0.0, want*10
	// Every window that starts at an event and ends before the last one.
	for i, e := range events {
		end := e.at.Add(window)
		if end.After(last) {
			break
		}
		got := 0
		for _, f := range events[i:] {
			if !f.at.Before(end) {
				break
			}
			got += f.n
		}
		off := e.at.Sub(first)
		if g := float64(got); g > want*1.05 {
			t.Errorf("window [%v, %v): served %.2f MiB, over %.2f MiB (+5 %% of %.2f)", off.Round(time.Millisecond), (off + window).Round(time.Millisecond), g/(1<<20), want*1.05/(1<<20), want/(1<<20))
		} else if off >= time.Second && g < want*0.75 {
			t.Errorf("window [%v, %v): served %.2f MiB, far below %.2f MiB", off.Round(time.Millisecond), (off + window).Round(time.Millisecond), g/(1<<20), want/(1<<20))
		}
		maxGot = max(maxGot, float64(got))
		if off >= time.Second {
			minGot = min(minGot, float64(got))
		}
	}
	t.Logf("2 s windows: at most %.1f %%, after the first second at least %.1f %% of the cap", 100*maxGot/want, 100*minGot/want)
}
