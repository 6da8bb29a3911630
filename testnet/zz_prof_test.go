package testnet

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

func TestZZProf(t *testing.T) {
	if os.Getenv("ZZPROF") == "" { t.Skip() }
	go func() {
		time.Sleep(25 * time.Second)
		f, _ := os.Create("/tmp/tn/heap.prof")
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}()
	res, err := Run(context.Background(), Config{Nodes: 200, Size: 16 << 20, Method: reconcile.Complete, Dir: t.TempDir(), SkipVerify: true})
	t.Log(err, res.RunSeconds, res.PeakMemMiB)
}
