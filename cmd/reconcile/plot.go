package main

import (
	"image/color"

	"gonum.org/v1/plot/vg/draw"
)

// plotColor returns the i-th colour of a palette that stays readable in print.
func plotColor(i int) color.Color {
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	}
	return palette[i%len(palette)]
}

// plotShape returns the i-th glyph shape, so series differ without colour too.
func plotShape(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}
	return shapes[i%len(shapes)]
}
