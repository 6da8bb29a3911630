package cliutil

import (
	"strings"
	"testing"
)

// TestWrapHelp: a line longer than the width is broken at spaces, its
// continuation lines indented to where its text starts after its name; a
// word longer than the width stays whole.
func TestWrapHelp(t *testing.T) {
	in := "   --out PATH  write the file at PATH (as curl -o), or into the folder PATH\n" +
		"   a plain line of a description that runs on\n" +
		"   /ip4/127.0.0.1/tcp/4001/p2p/12D3KooWLRPJAA5o6F8rXbVSEiLHaSfnJ2Gv6QkW4BGWbXrUyxjf"
	want := "   --out PATH  write the file at PATH\n" +
		"               (as curl -o), or into\n" +
		"               the folder PATH\n" +
		"   a plain line of a description that\n" +
		"     runs on\n" +
		"   /ip4/127.0.0.1/tcp/4001/p2p/12D3KooWLRPJAA5o6F8rXbVSEiLHaSfnJ2Gv6QkW4BGWbXrUyxjf"
	if got := wrapHelp(in, 37); got != want {
		t.Errorf("wrapHelp\n got %q\nwant %q", got, want)
	}
	for _, line := range strings.Split(wrapHelp(in, 37), "\n")[:5] {
		if len(line) > 37 {
			t.Errorf("%q is over 37 columns", line)
		}
	}
}
