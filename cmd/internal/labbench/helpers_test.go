package labbench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	e2eOnce sync.Once
	e2eBin  string
	e2eErr  error
)

// e2eBinary builds the reconcile command once per test run: bench and flood
// run its seed and fetch commands as processes of their own.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	e2eOnce.Do(func() {
		dir, err := os.MkdirTemp("", "reconcile-e2e")
		if err != nil {
			e2eErr = err
			return
		}
		e2eBin = filepath.Join(dir, "reconcile")
		out, err := exec.Command("go", "build", "-o", e2eBin, "github.com/reconcile-p2p/reconcile/cmd/reconcile").CombinedOutput()
		if err != nil {
			e2eErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	return e2eBin
}
