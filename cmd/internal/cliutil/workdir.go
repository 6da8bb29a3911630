package cliutil

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// WorkFolder returns the folder a command that makes its own files works in:
// the --dir folder (created if missing, kept), or a new temporary folder
// named after name that done removes. done is never nil.
func WorkFolder(c *cli.Context, name string) (dir string, done func(), err error) {
	if dir = c.String("dir"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", func() {}, fmt.Errorf("--dir: %w", err)
		}
		return dir, func() {}, nil
	}
	if dir, err = os.MkdirTemp("", "reconcile-"+name+"-"); err != nil {
		return "", func() {}, fmt.Errorf("temporary folder: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// StepLog returns a printf to standard error for the steps of a long
// command, silent with --json (whose output is one JSON document).
func StepLog(c *cli.Context) func(format string, args ...any) {
	quiet := c.Bool("json")
	return func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(os.Stderr, format, args...)
		}
	}
}
