package testnet

import (
	"math"
	"runtime/metrics"
)

// schedMetric is the Go runtime's histogram of the time goroutines waited,
// runnable, for a CPU. A run whose goroutines wait long for the CPU (other
// work on the machine, or a time scale too small for the run) measures the
// machine as much as the protocol: their waits delay every message, where
// the described network's delays are what should.
const schedMetric = "/sched/latencies:seconds"

// schedSample reads the histogram of schedMetric (nil if the runtime has
// none).
func schedSample() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedWait returns the quantile q of the waits counted between the
// readings a and b of the histogram (b later): the upper bound of the
// bucket that holds it, in seconds (the lower bound for the last, unbounded
// bucket); 0 when nothing was counted or a reading is missing.
func schedWait(a, b *metrics.Float64Histogram, q float64) float64 {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) || len(b.Buckets) != len(b.Counts)+1 {
		return 0
	}
	var total uint64
	for i := range b.Counts {
		total += b.Counts[i] - a.Counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i := range b.Counts {
		seen += b.Counts[i] - a.Counts[i]
		if seen >= rank {
			if hi := b.Buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return max(b.Buckets[i], 0)
		}
	}
	return 0
}
