// Package labplot draws the figures of the lab commands (--plot FILE.png or
// .svg): the --plot flag, checked before the work starts, a colour and a glyph
// per reconciliation method, ticks for log scales, and files saved whole or
// not at all.
package labplot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// Flag is --plot for a command that draws a figure.
func Flag(what string) cli.Flag {
	return &cli.StringFlag{Name: "plot", Usage: what + " into `FILE` (.png or .svg; checked before the work starts)"}
}

// CheckPath reads --plot and checks, before any work, that the figure can
// be written there: a .png or .svg name in a folder this process can write to,
// not a folder itself. It returns "" when there is no --plot. It leaves no
// file behind.
func CheckPath(c *cli.Context) (string, error) {
	file := c.String("plot")
	if file == "" {
		return "", nil
	}
	ext := strings.ToLower(filepath.Ext(file))
	if ext != ".png" && ext != ".svg" {
		return "", cliutil.Usagef("--plot %q: want a file name ending in .png or .svg", file)
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return "", cliutil.Usagef("--plot %q: is a folder; want a file name ending in %s", file, ext)
	}
	probe, err := os.CreateTemp(filepath.Dir(file), ".reconcile-plot-*"+ext)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", cliutil.Usagef("--plot %s: cannot write in %s: %v", file, filepath.Dir(file), err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return file, nil
}

// Save draws p into file (PNG or SVG after its extension) through a
// temporary file renamed into place, so a failure leaves no file behind.
func Save(p *plot.Plot, w, h vg.Length, file string) error {
	ext := strings.ToLower(filepath.Ext(file))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot %s: want a .png or .svg file name", file)
	}
	wt, err := p.WriterTo(w, h, ext[1:])
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".reconcile-plot-*"+ext)
	if err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	_, err = wt.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return nil
}

// Colours that stay readable in print.
var (
	colBlue   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colRed    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colGreen  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colOrange = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colPurple = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colBrown  = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	// Grey is the colour of what belongs to no method (expected values).
	Grey = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
)

// methodStyles gives every reconciliation method one colour and one glyph in
// every figure (methods, table3, sim table4 and swarm, testnet).
var methodStyles = map[string]struct {
	color color.Color
	shape draw.GlyphDrawer
}{
	"complete": {colBlue, draw.CircleGlyph{}},
	"byers":    {colRed, draw.TriangleGlyph{}},
	"bitfield": {colGreen, draw.SquareGlyph{}},
	"iblt":     {colOrange, draw.CrossGlyph{}},
	"ccbf":     {colPurple, draw.PlusGlyph{}},
}

// MethodColor is the colour of a method in every figure (grey if unknown).
func MethodColor(method string) color.Color {
	if s, ok := methodStyles[strings.ToLower(method)]; ok {
		return s.color
	}
	return Grey
}

// MethodShape is the glyph of a method in every figure.
func MethodShape(method string) draw.GlyphDrawer {
	if s, ok := methodStyles[strings.ToLower(method)]; ok {
		return s.shape
	}
	return draw.RingGlyph{}
}

// Lighter mixes c with white: the paper's figures beside ours, a part of a bar.
func Lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 2*0xff) / 3) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 0xff}
}

// Color returns the i-th colour of the palette, for series that are not methods.
func Color(i int) color.Color {
	palette := []color.Color{colBlue, colRed, colGreen, colOrange, colPurple, colBrown}
	return palette[i%len(palette)]
}

// Shape returns the i-th glyph shape, so series differ without colour too.
func Shape(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	return shapes[i%len(shapes)]
}

// LogTicks marks every power of ten on a log axis, labelled in the shortest
// form ("0.001", "1e-05", "1000"), with unlabelled minor ticks between; gonum's
// LogTicks labels 1e-4 as 9.999999999999999e-05.
type LogTicks struct{}

// Ticks implements plot.Ticker.
func (LogTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	if !(lo > 0) || !(hi > lo) {
		return ts
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		decade := math.Pow(10, e)
		for k := 1.0; k < 10; k++ {
			v := k * decade
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
