package chunker

import (
	"fmt"
)

// CDCAlgorithm names the content-defined chunking rule that manifests record:
// FastCDC with normalized chunking (level 2) and the Gear table of
// github.com/PlakarKorp/go-cdc-chunkers, which registers it under this
// versioned name and keeps a name's boundaries fixed across releases.
const CDCAlgorithm = "fastcdc-v1.0.0"

// CDCAlgorithmNC0 names the content-defined chunking rule of DefaultChunking:
// the Gear table and masks of CDCAlgorithm without normalized chunking (one
// mask from Min to Max), so that after an edit the cuts meet the old ones
// again within a block or two. A Chunking of Algorithm "" is CDCAlgorithm.
const CDCAlgorithmNC0 = "reconcile-fastcdc-nc0-v1"

// Chunking is a rule of content-defined blocks (FastCDC, see CDCAlgorithm):
// the blocks of a file end where its bytes say, so that inserting or deleting
// bytes changes only the blocks around the edit, and the same bytes give the
// same blocks in any file and any version. Each file is cut on its own (no
// block spans files, a file's last block ends at its end, an empty file has
// no block). The rule is recorded in the manifest, so the same bytes always
// chunk the same way.
//
// A block is at least Min bytes long (but a file's last, which may be shorter)
// and at most Max. With CDCAlgorithm, past Min a cut is unlikely until Normal
// bytes and likely after (blocks average about 1.2 × Normal on random bytes);
// with CDCAlgorithmNC0 a cut is as likely at every byte past Min (about
// Min + Normal on average).
type Chunking struct {
	Algorithm string // CDCAlgorithmNC0, or "" for CDCAlgorithm (as manifests decode it)
	Min       int    // the shortest block but a file's last, at least MinBlockSize
	Normal    int    // where cuts become likely: a power of two, above Min
	Max       int    // the longest block: above Normal, at most MaxBlockSize
}

// DefaultChunking is the content-defined chunking of WithContentDefined:
// CDCAlgorithmNC0, blocks of 56 KiB to 1 MiB averaging about 121 KiB on random
// bytes (under the 256 KiB of DefaultBlockSize). The figures that chose it are
// in docs/chunking.md.
var DefaultChunking = Chunking{Algorithm: CDCAlgorithmNC0, Min: 56 << 10, Normal: 64 << 10, Max: 1 << 20}

// IsZero reports whether c is the zero Chunking, which stands for fixed-size
// blocks.
func (c Chunking) IsZero() bool { return c == Chunking{} }

// canon returns c with CDCAlgorithm written "", as manifests decode it.
func (c Chunking) canon() Chunking {
	if c.Algorithm == CDCAlgorithm {
		c.Algorithm = ""
	}
	return c
}

// name returns the name of c's rule, as the manifest records it.
func (c Chunking) name() string {
	if c.Algorithm == "" {
		return CDCAlgorithm
	}
	return c.Algorithm
}

// Check returns an error wrapping ErrBadBlockSize unless the Algorithm is
// known, MinBlockSize <= Min < Normal < Max <= MaxBlockSize and Normal is a
// power of two.
func (c Chunking) Check() error {
	if c.Algorithm != "" && c.Algorithm != CDCAlgorithm && c.Algorithm != CDCAlgorithmNC0 {
		return fmt.Errorf("%w: chunking %s: unknown algorithm, this build knows %q and %q", ErrBadBlockSize, c, CDCAlgorithm, CDCAlgorithmNC0)
	}
	if c.Min < MinBlockSize || c.Min >= c.Normal || c.Normal >= c.Max || c.Max > MaxBlockSize || c.Normal&(c.Normal-1) != 0 {
		return fmt.Errorf("%w: chunking %s: want %d <= min < normal < max <= %d, normal a power of two", ErrBadBlockSize, c, MinBlockSize, MaxBlockSize)
	}
	return nil
}

// String gives the rule as "algorithm min/normal/max" in bytes.
func (c Chunking) String() string {
	return fmt.Sprintf("%s %d/%d/%d", c.name(), c.Min, c.Normal, c.Max)
}
