package cliutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// RunCaptured runs app as reconcile runs it (flags may follow arguments),
// with args after the program name and stdin as its standard input, and
// returns what it wrote to its standard output and error, together. Tests
// of the command packages use it.
func RunCaptured(app *cli.App, stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	app.Reader = strings.NewReader(stdin)
	app.Writer = &out
	app.ErrWriter = &out
	full := append([]string{"reconcile"}, args...)
	err := app.Run(PermuteArgs(app, full))
	return out.String(), err
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// BuildReconcile builds the reconcile command once per process, into a
// temporary folder, and returns the binary's path: the end-to-end tests and
// the benchmarks run its seed and fetch commands as processes of their own.
func BuildReconcile() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "reconcile-e2e")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "reconcile")
		out, err := exec.Command("go", "build", "-o", buildBin, "github.com/reconcile-p2p/reconcile/cmd/reconcile").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return buildBin, buildErr
}
