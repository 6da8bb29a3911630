package main

import (
	"encoding/json"
	"io"
	"os"

	"golang.org/x/term"
)

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether f is an interactive terminal (progress bars go there only).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
