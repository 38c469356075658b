package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/telemetry"
)

// noQueues is a line with no queue: only the per-instance series.
type noQueues struct{}

func (noQueues) KnownQueues(context.Context) []string { return nil }
func (noQueues) Stats(context.Context, string) (queue.Stats, error) {
	return queue.Stats{}, queue.ErrQueueNotFound
}
func (noQueues) SnapshotAnswers() (uint64, uint64) { return 0, 0 }

// TestAdmittedCountsHowTheRangeFared: each user admitted counts once in
// waitroom_estimate_covered_total, under how the range shown at entry
// fared (rollup.Wait.Outcome); one never timed counts nowhere, and the
// ratio's histogram still counts everyone shown a wait.
func TestAdmittedCountsHowTheRangeFared(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := telemetry.New(reg, noQueues{})
	at := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	wait := func(seconds, low, high int64, apart bool) rollup.Wait {
		return rollup.Wait{Entered: at, Shown: 60, Low: low, High: high, Apart: apart, Admitted: at.Add(time.Duration(seconds) * time.Second)}
	}
	m.Admitted("sale", []rollup.Wait{
		wait(60, 45, 80, false), wait(70, 45, 80, false), wait(100, 45, 80, false),
		wait(60, 45, 80, true), wait(200, 45, 80, true), wait(200, 45, 80, true),
		wait(90, rollup.NoneShown, rollup.NoneShown, false),
		{Admitted: at}, // let straight in: never waited
	})
	want := map[string]float64{rollup.OutcomeIn: 2, rollup.OutcomeOut: 1, rollup.OutcomeApartIn: 1, rollup.OutcomeApartOut: 2, rollup.OutcomeUnknown: 1}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		if f.GetName() == "waitroom_estimate_ratio" {
			if n := f.GetMetric()[0].GetHistogram().GetSampleCount(); n != 7 {
				t.Errorf("the ratio counted %d, want the 7 timed and shown a wait", n)
			}
		}
		if f.GetName() != "waitroom_estimate_covered_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] != "sale" || s.GetCounter().GetValue() != want[labels["outcome"]] {
				t.Errorf("%v: %v, want %v", labels, s.GetCounter().GetValue(), want[labels["outcome"]])
			}
			seen++
		}
	}
	if seen != len(want) {
		t.Errorf("%d outcomes counted, want %d", seen, len(want))
	}
}
