package testnet

import (
	"math"
	"runtime/metrics"
	"testing"
)

// TestSchedWait: the quantile of the waits counted between two readings is
// the upper bound of its bucket (the lower bound of the unbounded last one),
// and nothing counted, or a missing reading, gives 0.
func TestSchedWait(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-3, 1e-2, math.Inf(1)}
	h := func(counts ...uint64) *metrics.Float64Histogram {
		return &metrics.Float64Histogram{Counts: counts, Buckets: buckets}
	}
	zero := h(0, 0, 0, 0)
	for _, tc := range []struct {
		name string
		a, b *metrics.Float64Histogram
		q    float64
		want float64
	}{
		{"all under a microsecond", zero, h(100, 0, 0, 0), 0.99, 1e-6},
		{"p99 in the millisecond bucket", zero, h(90, 9, 1, 0), 0.99, 1e-3},
		{"p99 in the ten-millisecond bucket", zero, h(90, 5, 5, 0), 0.99, 1e-2},
		{"the max in the unbounded bucket", zero, h(90, 5, 4, 1), 1, 1e-2},
		{"only the difference counts", h(0, 0, 0, 50), h(100, 0, 0, 50), 0.99, 1e-6},
		{"nothing counted", h(5, 5, 5, 5), h(5, 5, 5, 5), 0.99, 0},
		{"no reading", nil, h(1, 0, 0, 0), 0.99, 0},
		{"readings that disagree", h(1, 0), h(1, 0, 0, 0), 0.99, 0},
	} {
		if got := schedWait(tc.a, tc.b, tc.q); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}

// TestSchedSample: this runtime keeps the histogram the testnet reads.
func TestSchedSample(t *testing.T) {
	if schedSample() == nil {
		t.Fatalf("no %s histogram", schedMetric)
	}
}
