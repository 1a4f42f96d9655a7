package main

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// A line chart drawn with the standard library (and basicfont for the labels).

type series struct {
	name   string
	color  color.RGBA
	xs, ys []float64
	dashed bool
	points bool // mark every point (always done for a single point)
}

type chart struct {
	title, xLabel, yLabel string
	series                []series
	// xFromZero starts the x axis at 0; yMax, if set, ends the y axis there.
	xFromZero bool
	yMax      float64
	// legendBottomRight moves the legend from the top left.
	legendBottomRight bool
}

const (
	chartW, chartH                            = 900, 540
	marginL, marginR, marginTop, marginBottom = 80, 30, 50, 60
)

var (
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{225, 225, 225, 255}
	// a colour-blind friendly palette (Okabe-Ito).
	palette = []color.RGBA{{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255}, {230, 159, 0, 255}, {86, 180, 233, 255}}
)

// save draws the chart into a PNG file.
func (c chart) save(path string) error {
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	xMin, xMax, yMin, yMax := c.bounds()
	xStep, yStep := niceStep(xMax-xMin), niceStep(yMax-yMin)
	xMin, xMax = math.Floor(xMin/xStep)*xStep, math.Ceil(xMax/xStep)*xStep
	yMin, yMax = math.Floor(yMin/yStep)*yStep, math.Ceil(yMax/yStep)*yStep
	left, right, top, bottom := marginL, chartW-marginR, marginTop, chartH-marginBottom
	px := func(x float64) int { return left + int(math.Round((x-xMin)/(xMax-xMin)*float64(right-left))) }
	py := func(y float64) int { return bottom - int(math.Round((y-yMin)/(yMax-yMin)*float64(bottom-top))) }

	// Grid, ticks and their labels.
	for x := xMin; x <= xMax+xStep/2; x += xStep {
		line(img, px(x), top, px(x), bottom, grey, 1, false)
		label := formatTick(x, xStep)
		text(img, px(x)-textWidth(label)/2, bottom+16, label, black)
	}
	for y := yMin; y <= yMax+yStep/2; y += yStep {
		line(img, left, py(y), right, py(y), grey, 1, false)
		label := formatTick(y, yStep)
		text(img, left-8-textWidth(label), py(y)+4, label, black)
	}
	line(img, left, bottom, right, bottom, black, 1, false)
	line(img, left, top, left, bottom, black, 1, false)
	text(img, (chartW-textWidth(c.title))/2, 24, c.title, black)
	text(img, (left+right-textWidth(c.xLabel))/2, chartH-18, c.xLabel, black)
	text(img, 8, top-12, c.yLabel, black)

	// The series, then the legend.
	for k, s := range c.series {
		for i := 1; i < len(s.xs); i++ {
			line(img, px(s.xs[i-1]), py(s.ys[i-1]), px(s.xs[i]), py(s.ys[i]), s.color, 2, s.dashed)
		}
		if s.points || len(s.xs) == 1 {
			for i := range s.xs {
				square(img, px(s.xs[i]), py(s.ys[i]), max(2, 6-k), s.color) // smaller on top
			}
		}
	}
	// The legend, in a white box: top left, or bottom right.
	w := 0
	for _, s := range c.series {
		w = max(w, textWidth(s.name))
	}
	w, h := w+52, len(c.series)*16+10
	x0, y0 := left+8, top+8
	if c.legendBottomRight {
		x0, y0 = right-8-w, bottom-8-h
	}
	draw.Draw(img, image.Rect(x0, y0, x0+w, y0+h), image.NewUniform(color.White), image.Point{}, draw.Src)
	line(img, x0, y0, x0+w, y0, grey, 1, false)
	line(img, x0, y0+h, x0+w, y0+h, grey, 1, false)
	line(img, x0, y0, x0, y0+h, grey, 1, false)
	line(img, x0+w, y0, x0+w, y0+h, grey, 1, false)
	for i, s := range c.series {
		y := y0 + 18 + i*16
		line(img, x0+8, y-4, x0+32, y-4, s.color, 2, s.dashed)
		text(img, x0+40, y, s.name, black)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// bounds of every series, the y range starting at 0.
func (c chart) bounds() (xMin, xMax, yMin, yMax float64) {
	xMin, xMax, yMax = math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, s := range c.series {
		for i := range s.xs {
			xMin, xMax, yMax = min(xMin, s.xs[i]), max(xMax, s.xs[i]), max(yMax, s.ys[i])
		}
	}
	if math.IsInf(xMin, 0) {
		return 0, 1, 0, 1
	}
	if c.xFromZero {
		xMin = 0
	}
	if xMax <= xMin { // a single x: centre it
		xMin, xMax = xMin*0.5, xMax*1.5+1
	}
	switch {
	case c.yMax > 0:
		return xMin, xMax, 0, c.yMax
	case yMax <= 0:
		yMax = 1
	}
	return xMin, xMax, 0, yMax * 1.05
}

// niceStep is a step of 1, 2 or 5 × 10^k giving about five ticks over span.
func niceStep(span float64) float64 {
	raw := span / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func formatTick(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// line draws from (x0, y0) to (x1, y1), width pixels wide, dashed or not (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, width int, dashed bool) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; ; n++ {
		if !dashed || (n/6)%2 == 0 {
			for i := range width {
				for j := range width {
					img.SetRGBA(x0+i-width/2, y0+j-width/2, c)
				}
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func square(img *image.RGBA, x, y, r int, c color.RGBA) {
	draw.Draw(img, image.Rect(x-r, y-r, x+r+1, y+r+1), image.NewUniform(c), image.Point{}, draw.Src)
}

func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func textWidth(s string) int { return font.MeasureString(basicfont.Face7x13, s).Round() }

func abs(v int) int { return max(v, -v) }

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
