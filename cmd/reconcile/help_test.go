package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// helpPaths lists the command lines of every command and subcommand below
// prefix ("fetch", "sim swarm", ...).
func helpPaths(prefix []string, cmds []*cli.Command) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(append([]string(nil), prefix...), c.Name)
		out = append(out, p)
		out = append(out, helpPaths(p, c.Subcommands)...)
	}
	return out
}

// TestHelpWidth: every help page, of reconcile and of each command and
// subcommand, fits in cliutil.HelpWidth (100) columns.
func TestHelpWidth(t *testing.T) {
	paths := append([][]string{nil}, helpPaths(nil, commands())...)
	for _, p := range paths {
		code, stdout, stderr := runCLI(t, append(p, "--help")...)
		if code != cliutil.ExitOK || stderr != "" || !strings.HasPrefix(stdout, "NAME:") {
			t.Errorf("reconcile %s --help: exit %d, stderr %q", strings.Join(p, " "), code, stderr)
			continue
		}
		for _, line := range strings.Split(stdout, "\n") {
			if n := len([]rune(line)); n > cliutil.HelpWidth {
				t.Errorf("reconcile %s --help: %d columns: %q", strings.Join(p, " "), n, line)
			}
		}
	}
	if len(paths) < 20 {
		t.Errorf("only %d help pages", len(paths))
	}
}

// TestFetchHelpShort: fetch --help is at most 45 lines; the flags most users
// need come first, the network and tuning flags after, under their names.
func TestFetchHelpShort(t *testing.T) {
	_, stdout, _ := runCLI(t, "fetch", "--help")
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) > 45 {
		t.Errorf("fetch --help is %d lines, want at most 45:\n%s", len(lines), stdout)
	}
	order := []string{"TICKET|ROOT", "--json", "--out PATH", "--progress MODE", categoryNetwork, "--relay ADDR", categoryTuning, "--window"}
	at := 0
	for _, s := range order {
		i := strings.Index(stdout[at:], s)
		if i < 0 {
			t.Fatalf("fetch --help: %q missing or out of order (want %q):\n%s", s, order, stdout)
		}
		at += i
	}
	if strings.Contains(stdout, "reconcile relay [") || strings.Contains(stdout, " value [") {
		t.Errorf("fetch --help has a placeholder made of usage text:\n%s", stdout)
	}
}

// TestHelpGroups: reconcile --help lists the commands that share files and
// the lab commands apart, each under its category.
func TestHelpGroups(t *testing.T) {
	_, stdout, _ := runCLI(t, "--help")
	files := strings.Index(stdout, "\n   "+categoryFiles+":\n")
	lab := strings.Index(stdout, "\n   "+categoryLab+":\n")
	if files < 0 || lab < 0 || files > lab {
		t.Fatalf("reconcile --help: no %s group before a %s group:\n%s", categoryFiles, categoryLab, stdout)
	}
	for _, name := range []string{"demo", "seed", "fetch", "relay", "chunk", "verify"} {
		if i := strings.Index(stdout, "\n     "+name+" "); i < files || i > lab {
			t.Errorf("%s is not listed under %s", name, categoryFiles)
		}
	}
	for _, name := range []string{"bench", "flood", "testnet", "sim", "experiment", "cbf"} {
		if i := strings.Index(stdout, "\n     "+name+" "); i < lab {
			t.Errorf("%s is not listed under %s", name, categoryLab)
		}
	}
}
