package testnet

import (
	"context"
	"testing"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

func TestRunSmall(t *testing.T) {
	for _, m := range []reconcile.Method{reconcile.Complete, reconcile.Byers} {
		for _, hold := range []float64{0, 0.3} {
			res, err := Run(context.Background(), Config{Nodes: 20, Size: 4 << 20, Method: m, Hold: hold, Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("%v hold %g: %v (%+v)", m, hold, err, res)
			}
			t.Logf("%v hold %g: median %.2f p95 %.2f max %.2f s, run %.1f setup %.1f verify %.1f, wire %v, recv %d red %d missed %d false %d sessions %d offered %d mem %.0f MiB",
				m, hold, res.MedianS, res.P95S, res.MaxS, res.RunSeconds, res.SetupSeconds, res.VerifySeconds, res.Wire, res.BlocksReceived, res.Redundant, res.Missed, res.FalseOffers, res.Sessions, res.Offered, res.PeakMemMiB)
		}
	}
}
