// Package rates reads and writes the link rates and access classes of the
// testnet and the simulator as the command line writes them: "20Mbit",
// "2MiB/s", "0.5:100Mbit/20Mbit,0.5:10Mbit/2Mbit".
package rates

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	ts "github.com/reconcile-p2p/reconcile/sim/transitstub"
)

// ErrRate means a rate string could not be parsed.
var ErrRate = errors.New("testnet: bad rate")

// ParseClasses parses access-link classes written share:down/up, separated by
// commas, e.g. "0.5:10Mbit/2Mbit,0.5:100Mbit/20Mbit" (half the peers download
// at 10 Mbit/s and upload at 2 Mbit/s, the other half at 100 and 20); rates as
// ParseRate reads them. The shares must sum to 1. "" means no classes.
func ParseClasses(s string) ([]ts.AccessClass, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cls []ts.AccessClass
	for _, part := range strings.Split(s, ",") {
		share, rates, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("%w: class %q: want share:down/up, e.g. 0.5:100Mbit/20Mbit", ErrRate, part)
		}
		// A rate may end in /s: split at the slash that separates the two.
		down, up, ok := splitRates(rates)
		if !ok {
			return nil, fmt.Errorf("%w: class %q: want share:down/up, e.g. 0.5:100Mbit/20Mbit", ErrRate, part)
		}
		var c ts.AccessClass
		var err error
		if c.Share, err = strconv.ParseFloat(strings.TrimSpace(share), 64); err != nil {
			return nil, fmt.Errorf("%w: class %q: share %q is not a number", ErrRate, part, share)
		}
		if c.Down, err = ParseRate(down); err != nil {
			return nil, err
		}
		if c.Up, err = ParseRate(up); err != nil {
			return nil, err
		}
		cls = append(cls, c)
	}
	if err := ts.ValidateClasses(cls); err != nil {
		return nil, fmt.Errorf("%w: %q: shares must be in (0, 1] and sum to 1", ErrRate, s)
	}
	return cls, nil
}

// splitRates splits "down/up" where either rate may end in "/s".
func splitRates(s string) (down, up string, ok bool) {
	parts := strings.Split(s, "/")
	var fields []string
	for _, p := range parts {
		if strings.TrimSpace(p) == "s" && len(fields) > 0 {
			fields[len(fields)-1] += "/s"
			continue
		}
		fields = append(fields, p)
	}
	if len(fields) != 2 {
		return "", "", false
	}
	return fields[0], fields[1], true
}

// ParseRate parses a rate with an explicit unit and returns bytes per second:
// bits per second with SI (decimal) prefixes, "bit", "kbit", "Mbit", "Gbit",
// "Tbit" (also spelt "bps", "kbps", "Mbps", ...; any case), or bytes per
// second with IEC (binary) prefixes, "B", "KiB", "MiB", "GiB" (exactly so
// spelt); either with or without "/s". So "20Mbit" and "100Mbit/s" are 2.5e6
// and 12.5e6 bytes per second, "2.5Gbit" 3.125e8 and "10MiB/s" 10485760. "",
// "0" and "none" mean no cap (0). A number without a unit other than 0 and SI
// byte units ("MB", ambiguous with megabits in common use) are refused with a
// hint.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "none") {
		return 0, nil
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: no number", ErrRate, s)
	}
	unit := strings.TrimSuffix(strings.TrimSpace(t[i:]), "/s")
	if unit == "" {
		if v == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: %q has no unit (write e.g. 20Mbit or 2MiB/s)", ErrRate, s)
	}
	mult, ok := byteUnits[unit]
	if !ok {
		mult, ok = bitUnits[strings.ToLower(unit)]
	}
	if !ok {
		if _, si := siByteUnits[strings.ToLower(unit)]; si {
			return 0, fmt.Errorf("%w: %q: write bits with SI prefixes (8Mbit) or bytes with IEC prefixes (1MiB/s), not %s", ErrRate, s, unit)
		}
		return 0, fmt.Errorf("%w: %q: unknown unit %q (want bit, kbit, Mbit, Gbit or B, KiB, MiB, GiB, with or without /s)", ErrRate, s, unit)
	}
	r := v * mult
	if math.IsInf(r, 0) {
		return 0, fmt.Errorf("%w: %q is too large", ErrRate, s)
	}
	return r, nil
}

// FormatRate writes a rate of bytes per second in Mbit/s (the unit the
// testnet and the simulator print links in), or "no cap" for 0.
func FormatRate(bps float64) string {
	if bps <= 0 {
		return "no cap"
	}
	return strconv.FormatFloat(math.Round(bps*8/1e3)/1e3, 'f', -1, 64) + " Mbit/s"
}

// byteUnits and bitUnits are bytes per second per unit; siByteUnits are
// refused.
var (
	byteUnits = map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	bitUnits  = map[string]float64{"bit": 1.0 / 8, "bps": 1.0 / 8,
		"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "tbit": 1e12 / 8,
		"kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8, "tbps": 1e12 / 8}
	siByteUnits = map[string]struct{}{"kb": {}, "mb": {}, "gb": {}, "tb": {}}
)
