package update

// Figures is what a run of the update scenario reports beside the usual
// figures (testnet.Result.Update), whose T* and completion ratios are then
// those of B_new, the bytes of the new blocks.
type Figures struct {
	// Fraction is the share of version 1's bytes overwritten, in Places
	// places (Edit).
	Fraction float64 `json:"fraction"`
	Places   int     `json:"places"`
	// OldRoot is version 1's root id (the run's Root is version 2's).
	OldRoot string `json:"old_root"`
	// SharedBlocks, NewBlocks and NewBytes are Compare's: the blocks of
	// version 2 that version 1 holds, those it lacks, and their bytes
	// (B_new).
	SharedBlocks int   `json:"shared_blocks"`
	NewBlocks    int   `json:"new_blocks"`
	NewBytes     int64 `json:"new_bytes"`
	// SeedBlockBytes is the bytes of the blocks the seed sent; Copies is
	// that over NewBytes, the copies of the new blocks it served (1 at
	// best: the fetchers trade the rest among themselves).
	SeedBlockBytes int64   `json:"seed_block_bytes"`
	Copies         float64 `json:"copies"`
	// Reused is, for each fetcher in node order, the blocks its store took
	// from its copy of version 1 before fetching (chunker.Store.Reuse);
	// each should be SharedBlocks. ReusedMin and ReusedMax are the least
	// and the most of them.
	Reused    []int `json:"reused_blocks"`
	ReusedMin int   `json:"reused_min"`
	ReusedMax int   `json:"reused_max"`
	// FileTStarS is T* for the whole file, for comparison (the run's
	// TStarS is for NewBytes).
	FileTStarS float64 `json:"file_tstar_s,omitempty"`
	// PathBoundMedianS and PathBoundMaxS are the median and the largest,
	// over the fetchers, of a lower bound on each one's completion that
	// counts the links' latency as T* does not: NewBytes over the seed's
	// upload (the last new block to leave the seed leaves no sooner) plus
	// the least latency of a path of links from the seed to the fetcher
	// (the time that block needs to reach it), or T* when larger.
	// MedianOverPathBound is the run's median completion over
	// PathBoundMedianS.
	PathBoundMedianS    float64 `json:"path_bound_median_s,omitempty"`
	PathBoundMaxS       float64 `json:"path_bound_max_s,omitempty"`
	MedianOverPathBound float64 `json:"median_over_path_bound,omitempty"`
}

// NewFigures returns the figures of an update of fraction in places
// places from version 1 of root oldRoot, whose blocks are d.
func NewFigures(fraction float64, places int, oldRoot string, d Delta) *Figures {
	return &Figures{Fraction: fraction, Places: places, OldRoot: oldRoot,
		SharedBlocks: d.SharedBlocks, NewBlocks: d.NewBlocks, NewBytes: d.NewBytes}
}

// AddReused notes that the next fetcher took n blocks from version 1.
func (f *Figures) AddReused(n int) {
	if len(f.Reused) == 0 || n < f.ReusedMin {
		f.ReusedMin = n
	}
	f.ReusedMax = max(f.ReusedMax, n)
	f.Reused = append(f.Reused, n)
}

// SetSeedBytes sets SeedBlockBytes to n, and Copies from it.
func (f *Figures) SetSeedBytes(n int64) {
	f.SeedBlockBytes = n
	if f.NewBytes > 0 {
		f.Copies = float64(n) / float64(f.NewBytes)
	}
}
