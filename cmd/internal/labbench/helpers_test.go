package labbench

import (
	"testing"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// e2eBinary builds the reconcile command once per test run: bench and flood
// run its seed and fetch commands as processes of their own.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := cliutil.BuildReconcile()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
