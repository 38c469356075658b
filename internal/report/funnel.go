package report

// The funnel's bars, in SVG units: a label, then the bar, then its count.
const (
	funnelLabelR = 236 // labels end here (text-anchor end)
	funnelBarL   = 248
	funnelBarMax = 360
	funnelRow    = 34
)

// funnelGeometry places the funnel's parts; the template reads it.
type funnelGeometry struct{ LabelR, BarL, Row, Width int }

var funnelGeo = funnelGeometry{LabelR: funnelLabelR, BarL: funnelBarL, Row: funnelRow, Width: chartW}

// funnelView is the funnel drawn: who went how far, and who dropped out.
type funnelView struct {
	Desc   string
	Bars   []bar
	Height int
	Table  table
	Geo    funnelGeometry
}

// bar is one stage of the funnel; Loss marks those who dropped out.
type bar struct {
	Label, Count string
	// Y is the row's top, W the bar's width, CountX where its count goes.
	Y, W, CountX float64
	Loss         bool
}

func funnelOf(t funnel, x texts) funnelView {
	stages := []struct {
		key  string
		n    int64
		loss bool
	}{
		{"stageEntered", t.Entered, false}, {"stageAdmitted", t.Admitted, false},
		{"stageUsed", t.Used, false}, {"stageOrdered", t.Ordered, false},
		{"stageLeft", t.Left, true}, {"stageSkipped", t.Skipped, true}, {"stageExpired", t.Expired, true},
	}
	most := int64(1)
	for _, s := range stages {
		most = max(most, s.n)
	}
	v := funnelView{Height: len(stages) * funnelRow, Geo: funnelGeo,
		Desc: x.t("funnelDesc", "entered", x.count(t.Entered), "admitted", x.count(t.Admitted), "used", x.count(t.Used),
			"ordered", x.count(t.Ordered), "left", x.count(t.Left), "skipped", x.count(t.Skipped), "expired", x.count(t.Expired)),
		Table: table{Head: []string{x.t("colStage"), x.t("colCount"), x.t("colShare")}}}
	for i, s := range stages {
		w := funnelBarMax * float64(s.n) / float64(most)
		if s.n > 0 {
			w = max(w, 2) // a few people still show
		}
		v.Bars = append(v.Bars, bar{Label: x.t(s.key), Count: x.count(s.n), Y: float64(i * funnelRow), W: w, CountX: funnelBarL + w + 8, Loss: s.loss})
		v.Table.Rows = append(v.Table.Rows, []string{x.t(s.key), x.count(s.n), x.percent(s.n, t.Entered)})
	}
	return v
}
