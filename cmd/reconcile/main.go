// Command reconcile seeds and fetches files between peers with complete set
// reconciliation of counting Bloom filters, and runs the experiments of the paper
// behind it (filter algebra, reconciliation, a Transit-Stub/Chord simulation and a
// testnet of real peers).
//
// This package holds the commands users start with (demo, seed, fetch, relay,
// chunk, verify); the lab commands, which measure and reproduce the paper,
// live in the lab packages under cmd/internal, and what both share (the app,
// errors and exit codes, sizes, progress, JSON) in cmd/internal/cliutil.
// The command tree is listed here, in commands, in two categories of
// reconcile --help: files and lab. README.md beside this file says what
// reconcile fetch --help leaves out.
//
// Exit status: 0 on success, 1 when a command fails, 2 for a mistake on the
// command line (an unknown command or flag, a value out of range), 130 when
// Ctrl-C (143 when SIGTERM) cut a command's work short. Commands that run until
// interrupted (seed, fetch --seed-after once the fetch is done) exit 0 then.
package main

import (
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labbench"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labnet"
	"github.com/reconcile-p2p/reconcile/cmd/internal/labpaper"
)

// The categories the commands are listed under in reconcile --help.
const (
	categoryFiles = "files" // sharing files: what users start with
	categoryLab   = "lab"   // measurements and the paper's experiments
)

// commands returns the command tree of reconcile: the commands that share
// files, then the lab commands.
func commands() []*cli.Command {
	files := []*cli.Command{
		demoCommand(),
		seedCommand(),
		fetchCommand(),
		relayCommand(),
		chunkCommand(),
		verifyCommand(),
	}
	lab := slices.Concat(labbench.Commands(), labnet.Commands(), labpaper.Commands())
	for _, c := range files {
		c.Category = categoryFiles
	}
	for _, c := range lab {
		c.Category = categoryLab
	}
	return append(files, lab...)
}

func newApp() *cli.App {
	app := cliutil.NewApp("reconcile", commands())
	app.Usage = "P2P set reconciliation and file distribution with counting Bloom filter algebra"
	app.Version = versionString()
	app.Description = "Peers cut files into blocks and exchange counting Bloom filters (CBFs);\n" +
		"CBF subtraction finds every block the other side lacks (complete reconciliation).\n" +
		"Flags may come before or after a command's arguments. Sizes count in powers of\n" +
		"1024 everywhere (IEC units: 64KiB, 16MiB, 1GiB; K, M and G mean the same), in flags\n" +
		"and in output. -v (--verbose) shows the full error chain and libp2p's own logs.\n\n" +
		"Examples:\n" +
		"   reconcile demo                                 seed, reconcile and fetch on this machine\n" +
		"   reconcile seed movie.mkv --ticket-file t       serve a file, print its ticket\n" +
		"   reconcile fetch --ticket-file t --out big.iso  fetch it on another host (resumable)\n" +
		"   reconcile chunk movie.mkv --json               a file's manifest summary\n" +
		"   reconcile verify dl                            held, missing and corrupt blocks of a store\n" +
		"   reconcile cbf build --m 1024 --k 4 -o a.cbf < items.txt\n" +
		"   reconcile experiment table1 --trials 10        paper Table 1 (also table2, table3, methods)\n" +
		"   reconcile sim table4                           paper Table 4 on a simulated network\n" +
		"   reconcile testnet --nodes 200                  200 real peers in one process\n" +
		"   reconcile bench --size 1GiB                    fetch speed against a plain TCP copy\n\n" +
		"Run \"reconcile COMMAND --help\" for a command's flags and more examples.\n" +
		"Exit status: 0 done, 1 failed, 2 bad command line, 130 interrupted (Ctrl-C)."
	return app
}

// runMain runs the command line args (args[0] is the program name) with the
// given standard output and error, and returns the exit code (see
// cliutil.Run).
func runMain(args []string, stdout, stderr io.Writer) int {
	return cliutil.Run(newApp(), args, stdout, stderr)
}

func main() {
	// quic-go warns on stderr when it cannot enlarge UDP buffers; that is not
	// something a user of these commands can act on.
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	cliutil.SetLibp2pLogging(os.Stderr)
	stop := cliutil.StartEnvProfiles()
	code := runMain(os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
