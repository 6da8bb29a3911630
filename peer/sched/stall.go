package sched

import "time"

// Stall learns how often a source's blocks arrive, so that a source
// that stalls is given up (its claimed blocks going to others) after a few
// times its usual gap rather than the whole stall timeout, when other
// sources are there to take them.
type Stall struct {
	last time.Time
	gap  time.Duration // moving average of the gaps between blocks
	n    int
}

// StallMin is the shortest stall a source is given up for.
const StallMin = time.Second

// Arrived notes a block (or a failed wait) at t.
func (c *Stall) Arrived(t time.Time) {
	if !c.last.IsZero() {
		g := t.Sub(c.last)
		if c.n == 0 {
			c.gap = g
		} else {
			c.gap = (7*c.gap + g) / 8
		}
		c.n++
	}
	c.last = t
}

// Timeout is how long to wait for the next block: max, or, once a few gaps
// are known and others can take over, least (StallMin) and eight times the
// usual gap, the gaps measured on the caller's clock.
func (c *Stall) Timeout(max, least time.Duration, others bool) time.Duration {
	if !others || c.n < 4 {
		return max
	}
	return min(max, least+8*c.gap)
}
