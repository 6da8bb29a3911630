package cliutil

import (
	"encoding/json"
	"io"
)

// WriteJSON prints v as one indented JSON document.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
