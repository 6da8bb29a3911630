package labplot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// TestSavePlotLeavesNothingOnFailure: a plot that cannot be written leaves no
// file (not even its temporary one).
func TestSavePlotLeavesNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	p := plot.New()
	if err := Save(p, vg.Inch, vg.Inch, filepath.Join(dir, "x.pdf")); err == nil {
		t.Error("savePlot to .pdf: no error")
	}
	// The target is a folder: the rename fails after the drawing.
	if err := os.Mkdir(filepath.Join(dir, "d.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.png", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(p, vg.Inch, vg.Inch, filepath.Join(dir, "d.png")); err == nil {
		t.Error("savePlot onto a folder: no error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "d.png" {
		t.Errorf("left behind: %v", ents)
	}
	if err := Save(p, vg.Inch, vg.Inch, filepath.Join(dir, "ok.svg")); err != nil {
		t.Fatal(err)
	}
}

// TestMethodColours: each method has its own colour, the same in every figure.
func TestMethodColours(t *testing.T) {
	seen := map[any]string{}
	for _, m := range []string{"complete", "byers", "bitfield", "iblt", "ccbf"} {
		c := MethodColor(m)
		if other, ok := seen[c]; ok {
			t.Errorf("%s and %s share a colour", m, other)
		}
		seen[c] = m
		if MethodColor(strings.ToUpper(m)) != c || c == Grey {
			t.Errorf("%s: colour not found by name", m)
		}
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (LogTicks{}).Ticks(3e-5, 0.2) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.0001 0.001 0.01 0.1" {
		t.Errorf("labels %q", got)
	}
}
