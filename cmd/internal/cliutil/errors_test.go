package cliutil

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestUserMessage(t *testing.T) {
	pe := &fs.PathError{Op: "lstat", Path: "/x", Err: syscall.ENOENT}
	for _, tc := range []struct {
		err  error
		cmd  string
		want string
	}{
		{fmt.Errorf("peer: seed: %w", fmt.Errorf("chunker: %w", pe)), "reconcile seed", "/x: no such file or directory"},
		{errors.New("peer: bad ticket: empty (copy the whole token)"), "reconcile fetch", "bad ticket: empty (copy the whole token)"},
		{errors.New("sim table4: --n must be positive, got 0"), "reconcile sim table4", "--n must be positive, got 0"},
		{errors.New("sim: unknown --preset \"x\""), "reconcile sim table4", "unknown --preset \"x\""},
		{errors.New("testnet: complete: peer: no peer reached has them;\ntestnet: byers: x"), "reconcile testnet", "complete: no peer reached has them;; byers: x"},
		{errors.New("reconcile is a word: keep it"), "reconcile chunk", "reconcile is a word: keep it"},
	} {
		if got := userMessage(tc.err, tc.cmd); got != tc.want {
			t.Errorf("userMessage(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"262144", 262144, ""},
		{"256KiB", 256 << 10, ""},
		{"256k", 256 << 10, ""},
		{"16MiB", 16 << 20, ""},
		{" 1.5GiB ", 3 << 29, ""},
		{"100B", 100, ""},
		{"0", 0, ""},
		{"4MB", 0, "write 4MiB"},
		{"1kb", 0, "write 1KiB"},
		{"-1KiB", 0, "want a size"},
		{"", 0, "want a size"},
		{"1e3", 0, "want a size"},
		{"lots", 0, "want a size"},
		{"MiB", 0, "want a size"},
	} {
		got, err := ParseByteSize(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseByteSize(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}
