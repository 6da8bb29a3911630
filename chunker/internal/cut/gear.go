package cut

import (
	"math"

	"github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc"
)

// gear finds the cuts of FastCDC as go-cdc-chunkers' fastcdc-v1.0.0 does
// (same Gear table, same spaced masks, same skip of min bytes), with
// normalization level level: the block starting at data[0] ends at the first
// i in [min, max) where the Gear hash of data[min:i+1] has no bit of its mask
// set (maskS before normal, maskL from normal on), or at max, or at the end.
type gear struct {
	min, normal, max int
	maskS, maskL     uint64
}

// newGear returns the scanner of rule c at normalization level level.
func newGear(c CDC, level int) gear {
	bits := int(math.Log2(float64(c.Normal)))
	return gear{min: c.Min, normal: c.Normal, max: c.Max,
		maskS: spacedMask(bits + level), maskL: spacedMask(bits - level)}
}

// spacedMask spreads ones 1 bits evenly over a 64-bit word from its top bit
// down, as go-cdc-chunkers' generateSpacedMask does.
func spacedMask(ones int) uint64 {
	if ones >= 64 {
		return math.MaxUint64
	}
	if ones <= 0 {
		return 0
	}
	step := 64 / ones
	var m uint64
	for i := range ones {
		m |= 1 << (63 - i*step)
	}
	return m
}

// next returns the length of the block starting at data[0], where data holds
// at least max bytes or the rest of the file.
func (g *gear) next(data []byte) int {
	n := len(data)
	if n <= g.min {
		return n
	}
	normal := g.normal
	if n >= g.max {
		n = g.max
	} else if n <= normal {
		normal = n
	}
	i, fp := scan(data[g.min:normal], 0, g.maskS)
	if i >= 0 {
		return g.min + i
	}
	if i, _ = scan(data[normal:n], fp, g.maskL); i >= 0 {
		return normal + i
	}
	return n
}

// scan returns the first i where fp, updated with the Gear hash of each byte
// of d[:i+1], has no bit of mask set, or -1 and fp updated with all of d.
//
// fp = fp<<1 + G[b] makes each byte wait for the one before (a shift and an
// add), so scan takes four bytes a step: the fp after the four comes from
// the fp before them and a sum of their table entries computed beside it,
// and the three in between, computed off that path, are only tested.
func scan(d []byte, fp, mask uint64) (int, uint64) {
	tab := &fastcdc.G
	i := 0
	for ; i+4 <= len(d); i += 4 {
		q := d[i : i+4 : i+4]
		g0, g1, g2, g3 := tab[q[0]], tab[q[1]], tab[q[2]], tab[q[3]]
		f0 := fp<<1 + g0
		f1 := fp<<2 + (g0<<1 + g1)
		f2 := fp<<3 + (g0<<2 + g1<<1 + g2)
		f3 := fp<<4 + (g0<<3 + g1<<2 + g2<<1 + g3)
		if f0&mask == 0 {
			return i, f0
		}
		if f1&mask == 0 {
			return i + 1, f1
		}
		if f2&mask == 0 {
			return i + 2, f2
		}
		if f3&mask == 0 {
			return i + 3, f3
		}
		fp = f3
	}
	for ; i < len(d); i++ {
		fp = fp<<1 + tab[d[i]]
		if fp&mask == 0 {
			return i, fp
		}
	}
	return -1, fp
}
