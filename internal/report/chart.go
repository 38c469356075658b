package report

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// A chart's geometry in its SVG's own units; the SVG scales to the page.
const (
	chartW, chartH = 720, 250
	plotL, plotR   = 76, 700
	plotT, plotB   = 14, 214
)

// tick is a gridline or an axis label: where, in SVG units, and its text.
type tick struct {
	At    float64
	Label string
}

// series is one line of a chart: its name (the legend's), its look (a CSS
// class: a colour and a dash pattern, so lines differ in more than colour)
// and its SVG path.
type series struct {
	Name, Class, Path string
}

// table is a chart's figures for those who cannot see it, or want them.
type table struct {
	Head []string
	Rows [][]string
}

// chart is one section of the report: a heading, a sentence that says
// what the chart shows (its text alternative), the chart and its table.
type chart struct {
	ID, Heading, Desc string
	XTicks, YTicks    []tick
	Series            []series
	Table             table
	// Lead is a table shown before the chart, open (the lanes' figures
	// over the whole sale); nil for none.
	Lead *table
	// Empty: nothing to draw; Desc says why.
	Empty bool
}

// point is one value of a series at an instant; a series has no point
// where its value is not known (nobody let in: no time in line).
type point struct {
	At time.Time
	V  float64
}

// axes maps instants and values onto the plot.
type axes struct {
	from, to time.Time
	top      float64 // the value at the plot's top
}

func (a axes) x(t time.Time) float64 {
	span := a.to.Sub(a.from)
	if span <= 0 {
		return plotL
	}
	return plotL + (plotR-plotL)*float64(t.Sub(a.from))/float64(span)
}

func (a axes) y(v float64) float64 {
	if a.top <= 0 {
		return plotB
	}
	return plotB - (plotB-plotT)*min(v, a.top)/a.top
}

// path draws points as a line, lifting the pen where consecutive points
// are more than gap apart (minutes with nothing recorded); step draws a
// value held until the next (a rate in force).
func (a axes) path(pts []point, gap time.Duration, step bool) string {
	var b strings.Builder
	for i, p := range pts {
		x, y := a.x(p.At), a.y(p.V)
		switch {
		case i == 0 || p.At.Sub(pts[i-1].At) > gap:
			b.WriteString("M" + num(x) + " " + num(y))
		case step:
			b.WriteString("H" + num(x) + "V" + num(y))
		default:
			b.WriteString("L" + num(x) + " " + num(y))
		}
	}
	return b.String()
}

// num writes an SVG coordinate.
func num(v float64) string { return strconv.FormatFloat(round1(v), 'f', -1, 64) }

// round1 keeps a tenth of an SVG unit: finer than a screen shows, and the
// file stays small.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// chartGeometry places a chart's parts; the template reads it.
type chartGeometry struct {
	Width, Height, PlotL, PlotR, PlotT, PlotB, LabelX, LabelY int
}

var chartGeo = chartGeometry{Width: chartW, Height: chartH, PlotL: plotL, PlotR: plotR, PlotT: plotT, PlotB: plotB,
	LabelX: plotL - 8, LabelY: plotB + 22}

// niceTop is the value at the top of a plot whose highest value is v, and
// the step of its gridlines: 1, 2, 2.5 or 5 times a power of ten, 4 or 5
// steps.
func niceTop(v float64) (top, step float64) {
	if !(v > 0) {
		return 1, 0.25
	}
	raw := v / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * pow; step >= raw {
			break
		}
	}
	return math.Ceil(v/step) * step, step
}

// durationSteps are the gridlines' spacings for a time in line, in
// seconds: round to a reader of clocks.
var durationSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

// niceDuration is niceTop for seconds: at most 5 steps of a round duration.
func niceDuration(v float64) (top, step float64) {
	step = durationSteps[len(durationSteps)-1]
	for _, d := range durationSteps {
		if math.Ceil(v/d) <= 5 {
			step = d
			break
		}
	}
	return max(math.Ceil(v/step), 1) * step, step
}

// yTicks are the gridlines from 0 to the top, labelled by format.
func (a axes) yTicks(step float64, format func(float64) string) []tick {
	var out []tick
	for v := 0.0; v <= a.top+step/1e6; v += step {
		out = append(out, tick{At: round1(a.y(v)), Label: format(v)})
	}
	return out
}

// tickSteps are the spacings of the time axis's labels, in minutes.
var tickSteps = []int{1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080}

// xTicks label the time axis: at most 8 labels on round instants, with
// the day when the span is longer than one.
func (a axes) xTicks(loc *time.Location) []tick {
	span := a.to.Sub(a.from)
	step := time.Duration(tickSteps[len(tickSteps)-1]) * time.Minute
	for _, m := range tickSteps {
		if d := time.Duration(m) * time.Minute; span/d <= 7 {
			step = d
			break
		}
	}
	layout := "15:04"
	if span > 24*time.Hour {
		layout = "01-02 15:04"
	}
	var out []tick
	for t := a.from.Truncate(step); !t.After(a.to); t = t.Add(step) {
		if !t.Before(a.from) {
			out = append(out, tick{At: round1(a.x(t)), Label: t.In(loc).Format(layout)})
		}
	}
	return out
}
