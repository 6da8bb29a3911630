package labnet

import (
	"bytes"
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

// runJSON runs the CLI with args and returns its standard output alone (a
// --json document), without the progress lines a long run writes to
// standard error; on an error, both.
func runJSON(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := testApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	if err := app.Run(cliutil.PermuteArgs(app, append([]string{"reconcile"}, args...))); err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}
