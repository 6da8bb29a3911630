package labnet

import (
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// testApp is an app of this package's commands, as reconcile runs them.
func testApp() *cli.App { return cliutil.NewApp("reconcile", Commands()) }

// run runs the CLI with args and stdin, returning stdout and the error.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return cliutil.RunCaptured(testApp(), stdin, args...)
}
