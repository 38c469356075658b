package httpapi

import (
	"bytes"
	"encoding/json"

	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// answerJSON is the struct encoding/json wrote the enter and status answers from before
// appendAnswerJSON: the reference its bytes are checked against.
type answerJSON struct {
	Status               queue.State `json:"status"`
	Position             *position   `json:"position,omitempty"`
	QueueLength          *int64      `json:"queueLength,omitempty"`
	EstimatedWaitSeconds *int64      `json:"estimatedWaitSeconds,omitempty"`
	// The estimate's range (issue 54): waitTimeKnown in every answer that
	// may carry an estimate, the range when known, the reason when not.
	WaitTimeKnown         *bool      `json:"waitTimeKnown,omitempty"`
	EstimatedWaitRange    *waitRange `json:"estimatedWaitRange,omitempty"`
	WaitTimeUnknownReason string     `json:"waitTimeUnknownReason,omitempty"`
	Token                 string     `json:"token,omitempty"`
	ExpiresAt             *time.Time `json:"expiresAt,omitempty"`
	PollAfterSeconds      *int64     `json:"pollAfterSeconds"`
	Paused                bool       `json:"paused,omitempty"`
	Stalled               bool       `json:"stalled,omitempty"`
	OpensAt               *time.Time `json:"opensAt,omitempty"`
	Message               string     `json:"message,omitempty"`
}

// waitRange is a known wait's range, in seconds.
type waitRange struct {
	Low  int64 `json:"low"`
	High int64 `json:"high"`
}

// withWaitKnown is e with the view's estimate said as the answers say it.
func withWaitKnown(e answerJSON, v queue.View) answerJSON {
	known := v.Estimate.Known
	e.WaitTimeKnown = &known
	if known {
		e.EstimatedWaitRange = &waitRange{v.Estimate.Low, v.Estimate.High}
	} else {
		e.WaitTimeUnknownReason = v.Estimate.Reason
	}
	return e
}

// position is a WAITING answer's position: null in a draw.
type position struct {
	n     int64
	drawn bool
}

func (p position) MarshalJSON() ([]byte, error) {
	if p.drawn {
		return []byte("null"), nil
	}
	return json.Marshal(p.n)
}

func toAnswerJSON(v queue.View, message string) answerJSON {
	e := answerJSON{Status: v.State, PollAfterSeconds: v.PollAfterSeconds, Message: message}
	switch {
	case v.State == queue.Waiting && !v.OpensAt.IsZero():
		at := v.OpensAt.UTC()
		e.OpensAt, e.Paused = &at, v.Paused
		e = withWaitKnown(e, v)
	case v.State == queue.SoldOut:
		e = withWaitKnown(e, v)
	case v.State == queue.Waiting:
		e.Position, e.QueueLength, e.EstimatedWaitSeconds = &position{v.Position, v.Drawn}, &v.Length, &v.EstimatedWaitSeconds
		e.Paused, e.Stalled = v.Paused, v.Stalled && !v.Paused
		e = withWaitKnown(e, v)
	case v.State == queue.Ready:
		e.Token, e.ExpiresAt = v.Token, &v.ExpiresAt
	}
	return e
}

// encodingJSON is how the answers were written before: writeJSON's encoder.
func encodingJSON(v queue.View, message string) []byte {
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(toAnswerJSON(v, message))
	return buf.Bytes()
}

// unknown is an estimate the line cannot give, for the reason given.
func unknown(reason string) estimate.Estimate { return estimate.Estimate{Reason: reason} }

// TestAnswerShapes pins the documented answers (DESIGN.md §3); paused
// appears on WAITING only, and whether the wait is known (with its range,
// or why not) on WAITING and SOLD_OUT only (issue 54).
func TestAnswerShapes(t *testing.T) {
	t.Parallel()
	poll := int64(5)
	exp := time.Date(2026, 11, 27, 0, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		view queue.View
		want string
	}{
		{"waiting", queue.View{State: queue.Waiting, Position: 342, Length: 5120, EstimatedWaitSeconds: 4, PollAfterSeconds: &poll,
			Estimate: estimate.Estimate{Seconds: 4, Low: 3, High: 6, Known: true}},
			`{"status":"WAITING","position":342,"queueLength":5120,"estimatedWaitSeconds":4,"waitTimeKnown":true,"estimatedWaitRange":{"low":3,"high":6},"pollAfterSeconds":5}`},
		{"waiting in a draw", queue.View{State: queue.Waiting, Drawn: true, Length: 5120, EstimatedWaitSeconds: 257, PollAfterSeconds: &poll,
			Estimate: estimate.Estimate{Seconds: 257, Low: 20, High: 520, Known: true}},
			`{"status":"WAITING","position":null,"queueLength":5120,"estimatedWaitSeconds":257,"waitTimeKnown":true,"estimatedWaitRange":{"low":20,"high":520},"pollAfterSeconds":5}`},
		{"waiting at the front", queue.View{State: queue.Waiting, Position: 1, Length: 1, PollAfterSeconds: &poll, Estimate: estimate.Estimate{High: 1, Known: true}},
			`{"status":"WAITING","position":1,"queueLength":1,"estimatedWaitSeconds":0,"waitTimeKnown":true,"estimatedWaitRange":{"low":0,"high":1},"pollAfterSeconds":5}`},
		{"waiting paused", queue.View{State: queue.Waiting, Position: 1, Length: 1, PollAfterSeconds: &poll, Paused: true, Estimate: unknown(estimate.UnknownPaused)},
			`{"status":"WAITING","position":1,"queueLength":1,"estimatedWaitSeconds":0,"waitTimeKnown":false,"waitTimeUnknownReason":"paused","pollAfterSeconds":5,"paused":true}`},
		{"waiting stalled", queue.View{State: queue.Waiting, Position: 40, Length: 90, EstimatedWaitSeconds: 1, PollAfterSeconds: &poll, Stalled: true,
			Estimate: unknown(estimate.UnknownStalled)},
			`{"status":"WAITING","position":40,"queueLength":90,"estimatedWaitSeconds":1,"waitTimeKnown":false,"waitTimeUnknownReason":"stalled","pollAfterSeconds":5,"stalled":true}`},
		{"waiting paused, so not stalled", queue.View{State: queue.Waiting, Position: 40, Length: 90, PollAfterSeconds: &poll, Stalled: true, Paused: true,
			Estimate: unknown(estimate.UnknownPaused)},
			`{"status":"WAITING","position":40,"queueLength":90,"estimatedWaitSeconds":0,"waitTimeKnown":false,"waitTimeUnknownReason":"paused","pollAfterSeconds":5,"paused":true}`},
		{"waiting beyond the stock", queue.View{State: queue.Waiting, Position: 40, Length: 90, EstimatedWaitSeconds: 40, PollAfterSeconds: &poll, BeyondStock: true,
			Estimate: unknown(estimate.UnknownBeyondStock)},
			`{"status":"WAITING","position":40,"queueLength":90,"estimatedWaitSeconds":40,"waitTimeKnown":false,"waitTimeUnknownReason":"beyond_stock","pollAfterSeconds":5,"beyondStock":true}`},
		{"waiting for the opening", queue.View{State: queue.Waiting, PollAfterSeconds: &poll, OpensAt: exp, Estimate: unknown(estimate.UnknownOpening)},
			`{"status":"WAITING","waitTimeKnown":false,"waitTimeUnknownReason":"opening","opensAt":"2026-11-27T00:05:00Z","pollAfterSeconds":5}`},
		{"sold out", queue.View{State: queue.SoldOut, PollAfterSeconds: &poll, Estimate: unknown(estimate.UnknownSoldOut)},
			`{"status":"SOLD_OUT","waitTimeKnown":false,"waitTimeUnknownReason":"sold_out","pollAfterSeconds":5}`},
		{"ready", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`},
		{"ready, a lane set", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp, Lane: "gold"},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`},
		{"ready paused", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp, Paused: true},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`},
		{"not in queue", queue.View{State: queue.NotInQueue},
			`{"status":"NOT_IN_QUEUE","pollAfterSeconds":null}`},
		{"not in queue paused", queue.View{State: queue.NotInQueue, Paused: true},
			`{"status":"NOT_IN_QUEUE","pollAfterSeconds":null}`},
		{"waiting, with a message", queue.View{State: queue.Waiting, Position: 1, Length: 1, PollAfterSeconds: &poll, Estimate: estimate.Estimate{High: 1, Known: true}},
			`{"status":"WAITING","position":1,"queueLength":1,"estimatedWaitSeconds":0,"waitTimeKnown":true,"estimatedWaitRange":{"low":0,"high":1},"pollAfterSeconds":5,"message":"Restocked <b>M</b>"}`},
		{"ready, with a message", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null,"message":"Restocked <b>M</b>"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var message string
			if strings.HasSuffix(c.name, "with a message") {
				message = "Restocked <b>M</b>"
			}
			got := appendAnswerJSON(nil, c.view, message)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			json.Unmarshal([]byte(c.want), &w)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestAnswerJSONIsEncodingJSONs: the hand-written answers are byte for byte
// what encoding/json wrote from answerJSON, for every state and for values
// that need escaping or carry nanoseconds.
func TestAnswerJSONIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(14, 1))
	tokens := []string{"", "AbC-_09xyzAbC-_09xyzAb", `quote"back\slash`, "<html>&amp;", "tab\there", "é-ü", "\u2028", "bad\xffutf8"}
	states := []queue.State{queue.Waiting, queue.Ready, queue.NotInQueue, queue.SoldOut, "", "ODD\"STATE"}
	reasons := []string{"", estimate.UnknownPaused, estimate.UnknownStalled, estimate.UnknownOpening, estimate.UnknownSoldOut, estimate.UnknownBeyondStock}
	for i := range 2000 {
		v := queue.View{
			State: states[rnd.IntN(len(states))], Position: rnd.Int64N(1 << 40), Length: rnd.Int64N(1 << 40),
			EstimatedWaitSeconds: rnd.Int64N(100000) - 1, Token: tokens[rnd.IntN(len(tokens))],
			ExpiresAt: time.UnixMilli(rnd.Int64N(4e12)).UTC().Add(time.Duration(rnd.IntN(3)) * 1234 * time.Nanosecond),
			Paused:    rnd.IntN(2) == 0, Stalled: rnd.IntN(2) == 0, Drawn: rnd.IntN(3) == 0,
		}
		if rnd.IntN(2) == 0 {
			low := rnd.Int64N(100000)
			v.Estimate = estimate.Estimate{Seconds: low + rnd.Int64N(1000), Low: low, High: low + rnd.Int64N(100000), Known: true}
		} else {
			v.Estimate = unknown(reasons[rnd.IntN(len(reasons))])
		}
		if rnd.IntN(4) == 0 {
			v.OpensAt = time.UnixMilli(rnd.Int64N(4e12)).In(time.FixedZone("KST", 9*3600))
		}
		if rnd.IntN(3) > 0 {
			p := rnd.Int64N(13) - 1
			v.PollAfterSeconds = &p
		}
		message := tokens[rnd.IntN(len(tokens))]
		want, got := encodingJSON(v, message), appendAnswerJSON(nil, v, message)
		if !bytes.Equal(want, got) {
			t.Fatalf("view %d %+v:\nencoding/json %s\nappended      %s", i, v, want, got)
		}
	}
}

func TestAnswerJSONAllocatesNothing(t *testing.T) {
	poll := int64(10)
	buf := make([]byte, 0, 256)
	for _, v := range []queue.View{
		{State: queue.Waiting, Position: 999_999, Length: 1_000_000, EstimatedWaitSeconds: 10_000, PollAfterSeconds: &poll,
			Estimate: estimate.Estimate{Seconds: 10_000, Low: 8_000, High: 13_000, Known: true}},
		{State: queue.Waiting, Position: 999_999, Length: 1_000_000, EstimatedWaitSeconds: 10_000, PollAfterSeconds: &poll, Stalled: true,
			Estimate: unknown(estimate.UnknownStalled)},
		{State: queue.Ready, Token: "AbC-_09xyzAbC-_09xyzAb", ExpiresAt: time.Now()},
		{State: queue.NotInQueue},
		{State: queue.Waiting, OpensAt: time.Now(), PollAfterSeconds: &poll, Estimate: unknown(estimate.UnknownOpening)},
		{State: queue.SoldOut, PollAfterSeconds: &poll, Estimate: unknown(estimate.UnknownSoldOut)},
	} {
		if n := testing.AllocsPerRun(100, func() { buf = appendAnswerJSON(buf[:0], v, "Restocked: S and M") }); n != 0 {
			t.Errorf("%s: %v allocations", v.State, n)
		}
	}
}

// BenchmarkAnswerJSON: a far-back poll's answer through encoding/json, as
// before, and appended by hand, as now, in one run.
//
//	go test -run '^$' -bench EntryJSON -benchmem ./internal/httpapi/
func BenchmarkAnswerJSON(b *testing.B) {
	poll := int64(10)
	v := queue.View{State: queue.Waiting, Position: 734_211, Length: 1_000_000, EstimatedWaitSeconds: 7343, PollAfterSeconds: &poll,
		Estimate: estimate.Estimate{Seconds: 7343, Low: 6012, High: 9120, Known: true}}
	b.Run("encoding/json", func(b *testing.B) {
		for range b.N {
			var buf bytes.Buffer
			json.NewEncoder(&buf).Encode(toAnswerJSON(v, ""))
		}
	})
	b.Run("appended", func(b *testing.B) {
		for range b.N {
			bp := answerBufs.Get().(*[]byte)
			*bp = appendAnswerJSON((*bp)[:0], v, "")
			answerBufs.Put(bp)
		}
	})
}

// TestTheNoScriptPageGetsTheWholeEstimate: the page without JavaScript is
// handed the estimate as the answers say it (its range, or why it is not
// known), not only its median.
func TestTheNoScriptPageGetsTheWholeEstimate(t *testing.T) {
	t.Parallel()
	poll := int64(5)
	for _, e := range []estimate.Estimate{{Seconds: 240, Low: 180, High: 330, Known: true}, unknown(estimate.UnknownStalled)} {
		v := queue.View{State: queue.Waiting, Position: 40, Length: 90, EstimatedWaitSeconds: e.Seconds, Estimate: e, PollAfterSeconds: &poll}
		if got := (&Server{}).standing(nil, nil, v, nil).Estimate; got != e {
			t.Errorf("the page is given %+v, want %+v", got, e)
		}
	}
}
