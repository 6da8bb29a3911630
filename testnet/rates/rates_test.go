package rates

import (
	"errors"
	"math"
	"slices"
	"testing"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"", 0, false}, {"none", 0, false}, {"0", 0, false}, {"0Mbit", 0, false},
		// Bits per second, SI prefixes, any case, with or without /s.
		{"20Mbit", 2.5e6, false}, {"100Mbit/s", 12.5e6, false}, {"2.5Gbit", 3.125e8, false},
		{"10mbit", 1.25e6, false}, {"10Mbps", 1.25e6, false}, {"8bit", 1, false}, {"1Gbps", 1.25e8, false},
		{"64kbit/s", 8000, false}, {"1Tbit", 1.25e11, false},
		// Bytes per second, IEC prefixes, exactly spelt.
		{"10MiB/s", 10 << 20, false}, {"512KiB/s", 512 << 10, false}, {"1GiB", 1 << 30, false},
		{"250000B/s", 250000, false}, {"2 KiB", 2048, false},
		// Refused: no unit, SI bytes, unknown units, no number, overflow.
		{"250000", 0, true}, {"1.5MB/s", 0, true}, {"2 kB", 0, true}, {"1mb", 0, true}, {"1GB", 0, true},
		{"fast", 0, true}, {"10 parsecs", 0, true}, {"-5MiB", 0, true}, {"1e999", 0, true}, {"mib", 0, true},
		{"9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999Tbit", 0, true},
		{"1mib/s", 0, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrRate)) {
			t.Errorf("ParseRate(%q): error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if err == nil && math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("ParseRate(%q) = %g, want %g", tc.in, got, tc.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{{0, "no cap"}, {2.5e6, "20 Mbit/s"}, {12.5e6, "100 Mbit/s"}, {10 << 20, "83.886 Mbit/s"}, {125, "0.001 Mbit/s"}} {
		if got := FormatRate(tc.bps); got != tc.want {
			t.Errorf("FormatRate(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10Mbit", "1.5MiB/s", "none", "1e9", "..", "9999999999999999999999GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && (r < 0 || math.IsNaN(r) || math.IsInf(r, 0)) {
			t.Fatalf("ParseRate(%q) = %g", s, r)
		}
	})
}

func TestParseClasses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []ts.AccessClass
		err  bool
	}{
		{"", nil, false},
		{"0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit", []ts.AccessClass{{Share: 0.5, Down: 1.25e6, Up: 0.25e6}, {Share: 0.5, Down: 12.5e6, Up: 2.5e6}}, false},
		{"1:100Mbit/s/20Mbit/s", []ts.AccessClass{{Share: 1, Down: 12.5e6, Up: 2.5e6}}, false},
		{"0.25:10MiB/s/1MiB, 0.75:1Gbit/0", []ts.AccessClass{{Share: 0.25, Down: 10 << 20, Up: 1 << 20}, {Share: 0.75, Down: 1.25e8, Up: 0}}, false},
		{"0.5:10Mbit/2Mbit", nil, true}, // shares sum to 0.5
		{"0.5:10Mbit/2Mbit,0.6:1Mbit/1Mbit", nil, true},
		{"1:10Mbit", nil, true},     // no upload
		{"10Mbit/2Mbit", nil, true}, // no share
		{"x:10Mbit/2Mbit", nil, true},
		{"1:10MB/2Mbit", nil, true}, // SI bytes
		{"1:10Mbit/2Mbit/3Mbit", nil, true},
	} {
		got, err := ParseClasses(tc.in)
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrRate)) {
			t.Errorf("ParseClasses(%q): error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseClasses(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
