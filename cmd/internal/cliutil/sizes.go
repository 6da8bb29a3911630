package cliutil

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Sizes on the command line and in the output count in powers of 1024 (IEC
// units: KiB, MiB, GiB), the units the chunker's block sizes come in.

// sizeUnits are the suffixes ParseByteSize knows, longest first.
var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
}

// errSizeSyntax is the one message for a size that does not parse.
var errSizeSyntax = errors.New("want a size such as 4096, 64KiB, 16MiB or 1.5GiB")

// ParseByteSize parses a size: "262144", "256KiB", "256K", "1.5GiB" (powers
// of 1024). "MB", "KB" and "GB" are refused with a hint rather than guessed
// (they mean powers of 1000 elsewhere).
func ParseByteSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	for _, si := range []string{"KB", "MB", "GB", "TB"} {
		if strings.HasSuffix(t, si) {
			num := strings.TrimSpace(strings.TrimSuffix(t, si))
			return 0, fmt.Errorf("sizes count in powers of 1024: write %s%ciB", num, si[0])
		}
	}
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || t == "" || strings.ContainsAny(t, "EXPN") || f < 0 || f*mult > math.MaxInt64/2 {
		return 0, errSizeSyntax
	}
	return int64(math.Round(f * mult)), nil
}

// FlagSize reads the size flag name and checks lo <= size <= hi (hi 0: no upper
// bound). Every size flag of every command goes through it, so they take the
// same forms and fail with the same words.
func FlagSize(c *cli.Context, name string, lo, hi int64) (int64, error) {
	s := c.String(name)
	n, err := ParseByteSize(s)
	if err != nil {
		return 0, Usagef("--%s %q: %v", name, s, err)
	}
	if n < lo || hi > 0 && n > hi {
		return 0, Usagef("--%s %s: %s", name, s, sizeRange(lo, hi))
	}
	return n, nil
}

// sizeRange says which sizes a flag takes.
func sizeRange(lo, hi int64) string {
	switch {
	case hi > 0:
		return fmt.Sprintf("want %s to %s", ExactSize(lo), ExactSize(hi))
	case lo > 0:
		return fmt.Sprintf("want at least %s", ExactSize(lo))
	}
	return "want a size"
}

// ExactSize writes n in the largest IEC unit that divides it: 1KiB, 16MiB, 1000 B.
func ExactSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// HumanBytes writes n in IEC units with one decimal: 512 B, 1.5 KiB, 16 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), 0
	for v >= unit && u < 5 {
		v /= unit
		u++
	}
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + []string{"", "KiB", "MiB", "GiB", "TiB", "PiB"}[u]
}

// MiB converts bytes to MiB.
func MiB(n int64) float64 { return float64(n) / (1 << 20) }

// FlagAtLeast reads the int flag name and checks it is at least lo.
func FlagAtLeast(c *cli.Context, name string, lo int) (int, error) {
	v := c.Int(name)
	if v < lo {
		return 0, Usagef("--%s %d: want at least %d", name, v, lo)
	}
	return v, nil
}

// CheckAtLeast checks every int flag of mins that c's command has against its
// lowest sensible value, in the order of the command's flags, before any work.
func CheckAtLeast(c *cli.Context, mins map[string]int) error {
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if lo, ok := mins[name]; ok {
			if _, err := FlagAtLeast(c, name, lo); err != nil {
				return err
			}
		}
	}
	return nil
}
