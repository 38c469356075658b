package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
)

// TestEntryShapes pins the three documented answers (DESIGN.md §3); paused
// appears on WAITING only.
func TestEntryShapes(t *testing.T) {
	t.Parallel()
	poll := int64(5)
	exp := time.Date(2026, 11, 27, 0, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		view queue.View
		want string
	}{
		{"waiting", queue.View{State: queue.Waiting, Position: 342, Length: 5120, EstimatedWaitSeconds: 4, PollAfterSeconds: &poll},
			`{"status":"WAITING","position":342,"queueLength":5120,"estimatedWaitSeconds":4,"pollAfterSeconds":5}`},
		{"waiting at the front", queue.View{State: queue.Waiting, Position: 1, Length: 1, PollAfterSeconds: &poll},
			`{"status":"WAITING","position":1,"queueLength":1,"estimatedWaitSeconds":0,"pollAfterSeconds":5}`},
		{"waiting paused", queue.View{State: queue.Waiting, Position: 1, Length: 1, PollAfterSeconds: &poll, Paused: true},
			`{"status":"WAITING","position":1,"queueLength":1,"estimatedWaitSeconds":0,"pollAfterSeconds":5,"paused":true}`},
		{"waiting stalled", queue.View{State: queue.Waiting, Position: 40, Length: 90, EstimatedWaitSeconds: 1, PollAfterSeconds: &poll, Stalled: true},
			`{"status":"WAITING","position":40,"queueLength":90,"estimatedWaitSeconds":1,"pollAfterSeconds":5,"stalled":true}`},
		{"waiting paused, so not stalled", queue.View{State: queue.Waiting, Position: 40, Length: 90, PollAfterSeconds: &poll, Stalled: true, Paused: true},
			`{"status":"WAITING","position":40,"queueLength":90,"estimatedWaitSeconds":0,"pollAfterSeconds":5,"paused":true}`},
		{"waiting for the opening", queue.View{State: queue.Waiting, PollAfterSeconds: &poll, OpensAt: exp},
			`{"status":"WAITING","opensAt":"2026-11-27T00:05:00Z","pollAfterSeconds":5}`},
		{"ready", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`},
		{"ready paused", queue.View{State: queue.Ready, Token: "tok", ExpiresAt: exp, Paused: true},
			`{"status":"READY","token":"tok","expiresAt":"2026-11-27T00:05:00Z","pollAfterSeconds":null}`},
		{"not in queue", queue.View{State: queue.NotInQueue},
			`{"status":"NOT_IN_QUEUE","pollAfterSeconds":null}`},
		{"not in queue paused", queue.View{State: queue.NotInQueue, Paused: true},
			`{"status":"NOT_IN_QUEUE","pollAfterSeconds":null}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(toEntryJSON(c.view))
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			json.Unmarshal(got, &g)
			json.Unmarshal([]byte(c.want), &w)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
