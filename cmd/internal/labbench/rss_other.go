//go:build !unix

package labbench

import "os"

// peakRSSMiB returns 0 where an ended process reports no peak resident set
// size (Windows' rusage holds only times): the report then leaves
// peak_rss_mib out.
func peakRSSMiB(*os.ProcessState) float64 { return 0 }
