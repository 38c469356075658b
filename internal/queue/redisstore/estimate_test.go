package redisstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// TestTickStateKeepsTheEstimatesFit: the estimate's model admission fits
// (issue 54) reads back from the queue's hash as it was written, to the
// bit, as the embedded store keeps it in memory.
func TestTickStateKeepsTheEstimatesFit(t *testing.T) {
	at := time.UnixMilli(1_800_000_123_456).UTC()
	for _, st := range []admission.TickState{
		{},
		{PaceClaimed: 0.123456, RateMean: 37.5, RateVar: 1.0 / 3, RateRecent: 12.000001, Phase: "second wave",
			Changes: []estimate.Change{{At: at, Rate: 0.1}, {At: at.Add(90 * time.Second), Rate: 0}, {At: at.Add(time.Hour), Rate: 1e6}},
			Surprise: at.Add(-time.Second)},
	} {
		got, err := decodeTick(encodeTick(st))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("the tick state read back as\n%+v\nwrote\n%+v", got, st)
		}
	}
	if _, err := decodeTick(map[string]string{"changes": "123:x"}); err == nil {
		t.Errorf("a damaged rate change read without an error")
	}
}
