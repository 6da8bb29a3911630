package bans

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/internal/testkit"
	"github.com/reconcile-p2p/reconcile/peer/serve"
)

// TestBanFileRoundTrip: writeBans then readBans gives the running bans back,
// without the expired ones, and a ban beyond banFor is cut to banFor.
func TestBanFileRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, b, c := testkit.NewKeyID(t), testkit.NewKeyID(t), testkit.NewKeyID(t)
	path := filepath.Join(t.TempDir(), File)
	in := map[lpeer.ID]time.Time{a: now.Add(time.Minute), b: now.Add(-time.Second), c: now.Add(time.Hour)}
	if err := writeBans(path, in, now); err != nil {
		t.Fatal(err)
	}
	got, err := readBans(path, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[lpeer.ID]time.Time{a: now.Add(time.Minute), c: now.Add(serve.BanFor)}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for id, u := range want {
		if !got[id].Equal(u) {
			t.Errorf("%s until %v, want %v", id, got[id], u)
		}
	}
	if got, err := readBans(filepath.Join(t.TempDir(), File), now); got != nil || err != nil {
		t.Errorf("no file: %v, %v; want nothing", got, err)
	}
}

// TestParseBans: what a ban file may hold, and what is refused or skipped.
func TestParseBans(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	id := testkit.NewKeyID(t).String()
	later := now.Add(time.Minute).Format(time.RFC3339)
	for _, tc := range []struct {
		name, in string
		n        int
		err      bool
	}{
		{"empty list", `[]`, 0, false},
		{"one", `[{"peer":"` + id + `","until":"` + later + `"}]`, 1, false},
		{"expired", `[{"peer":"` + id + `","until":"2020-01-01T00:00:00Z"}]`, 0, false},
		{"bad id skipped", `[{"peer":"nope","until":"` + later + `"}]`, 0, false},
		{"no time", `[{"peer":"` + id + `"}]`, 0, false},
		{"not json", `bans`, 0, true},
		{"truncated", `[{"peer":"` + id, 0, true},
		{"object", `{"peer":"x"}`, 0, true},
		{"empty", ``, 0, true},
		{"too long", `[` + strings.Repeat(" ", maxBanFileBytes) + `]`, 0, true},
	} {
		got, err := parseBans([]byte(tc.in), now)
		if (err != nil) != tc.err || len(got) != tc.n {
			t.Errorf("%s: %d bans, err %v; want %d, error %v", tc.name, len(got), err, tc.n, tc.err)
		}
	}
}

// FuzzParseBans: any bytes give bans or an error, never a panic, never more
// than maxBanned bans, none running past banFor.
func FuzzParseBans(f *testing.F) {
	f.Add([]byte(`[{"peer":"12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf","until":"2026-11-26T12:05:00Z"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"peer":1}]`))
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		bans, err := parseBans(b, now)
		if err != nil {
			return
		}
		if len(bans) > serve.MaxBanned {
			t.Fatalf("%d bans", len(bans))
		}
		for id, u := range bans {
			if !u.After(now) || u.After(now.Add(serve.BanFor)) {
				t.Fatalf("%s banned until %v", id, u)
			}
		}
	})
}
