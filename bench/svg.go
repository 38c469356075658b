package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	Color  string
	Points []Point
	Dashed bool
}

// LineChart renders series as a plain SVG line chart (no scripts, no
// external resources: any browser or viewer shows it).
func LineChart(title, xLabel, yLabel string, series []Series) string {
	const W, H, L, R, T, B = 760.0, 380.0, 70.0, 20.0, 40.0, 60.0
	xmax, ymax := 0.0, 0.0
	for _, s := range series {
		for _, p := range s.Points {
			xmax, ymax = math.Max(xmax, p.X), math.Max(ymax, p.Y)
		}
	}
	xmax, ymax = nice(xmax), nice(ymax)
	px := func(x float64) float64 { return L + x/xmax*(W-L-R) }
	py := func(y float64) float64 { return H - B - y/ymax*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", L, html.EscapeString(title))
	for i := 0; i <= 5; i++ {
		y := ymax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", L, py(y), W-R, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", L-6, py(y)+4, num(y))
		x := xmax * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), H-B+18, num(x))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", L, T, L, H-B)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (L+W-R)/2, H-B+38, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (T+H-B)/2, html.EscapeString(yLabel))
	for i, s := range series {
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", s.Color, dash, strings.Join(pts, " "))
		lx, ly := L+10+float64(i)*180, H-12.0
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"%s/>`+"\n", lx, ly-4, lx+24, ly-4, s.Color, dash)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+30, ly, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// BarChart renders labelled horizontal bars (value and a note per bar).
func BarChart(title, unit string, labels []string, values []float64, notes []string) string {
	const W, L, R, rowH, T = 760.0, 150.0, 170.0, 34.0, 44.0
	H := T + rowH*float64(len(labels)) + 20
	vmax := 0.0
	for _, v := range values {
		vmax = math.Max(vmax, v)
	}
	vmax = nice(vmax)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	colors := []string{"#888", "#1f77b4", "#2ca02c", "#888"}
	for i, l := range labels {
		y := T + rowH*float64(i)
		w := values[i] / vmax * (W - L - R)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`+"\n", L-8, y+rowH/2, html.EscapeString(l))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n", L, y+4, w, rowH-12, colors[i%len(colors)])
		note := num(values[i]) + " " + unit
		if i < len(notes) && notes[i] != "" {
			note += " · " + notes[i]
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%s</text>`+"\n", L+w+6, y+rowH/2, html.EscapeString(note))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// nice rounds up to 1, 2 or 5 × a power of ten.
func nice(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

func num(v float64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}
