package bench

import (
	"strings"
	"testing"
	"time"
)

// TestEstimatesCount: the section's arithmetic on people made by hand:
// who is scored, apart or not known, coverage over the ranged, the ratio
// with a point of 0 read as 1 s, the median person by point.
func TestEstimatesCount(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 19, 0, 0, 0, time.UTC)
	person := func(joined, waited time.Duration, point, low, high float64) estimatesPerson {
		p := estimatesPerson{joinedAt: joined, waiting: true, shown: true, known: true, knownSaid: true, ranged: true,
			point: point, low: low, high: high}
		p.placed = t0.Add(joined)
		p.admitted = p.placed.Add(waited)
		return p
	}
	paused := person(25*time.Second, 0, 0, 0, 0)
	paused.known, paused.ranged, paused.reason, paused.admitted = false, false, "paused", paused.placed.Add(130*time.Second)
	vanished := person(time.Second, 0, 10, 8, 12)
	vanished.vanished, vanished.admitted = true, time.Time{}
	people := []estimatesPerson{
		person(0, 10*time.Second, 10, 8, 12),                 // scored, first second, covered, ratio 1
		person(500*time.Millisecond, 3*time.Second, 0, 0, 1), // scored, first second, not covered, ratio 3 (point 0 → 1 s)
		person(5*time.Second, 9*time.Second, 10, 9, 11),      // scored, covered, ratio 0.9
		person(18*time.Second, 12*time.Second, 10, 9, 11),    // apart: the pause at 20 s fell while waiting
		paused, vanished,
	}
	e := &EstimatesScenario{Events: []EstimatesEvent{{Name: "pause", At: 20 * time.Second}, {Name: "resume", At: 140 * time.Second}}}
	estimatesCount(people, e)
	if e.Admitted != 5 || e.Vanished != 1 || e.Unknown["paused"] != 1 || e.Unshown != 0 {
		t.Errorf("admitted %d, vanished %d, not known %v, unshown %d; want 5, 1, 1 paused, 0", e.Admitted, e.Vanished, e.Unknown, e.Unshown)
	}
	s := e.Scored
	if s.Count != 3 || s.Ranged != 3 || s.Covered != 2 || s.RatioP50 != 1 || s.RatioP90 != 3 {
		t.Errorf("scored %+v; want 3, 3 ranged, 2 covered, ratio p50 1 and p90 3", s)
	}
	if s.Point != 10 || s.Low != 8 || s.High != 12 || s.Width != 1.5 {
		t.Errorf("the median person %g–%g–%g (%g×); want 8–10–12 (1.5×)", s.Low, s.Point, s.High, s.Width)
	}
	if e.First.Count != 2 || e.Apart.Count != 1 || e.Apart.Covered != 0 {
		t.Errorf("first second %+v, apart %+v; want 2 and 1 (not covered)", e.First, e.Apart)
	}
	if len(e.ByJoin) != 1 || e.ByJoin[0].Count != 3 {
		t.Errorf("by joining time %+v; want the three scored in the first 10 s", e.ByJoin)
	}
	if md := estimatesMarkdown(&EstimatesReport{Scenarios: []EstimatesScenario{*e}}, "stamp"); !strings.Contains(md, "66.7% of 3 **not met**") ||
		!strings.Contains(md, "1 paused") {
		t.Errorf("the section:\n%s", md)
	}
}
