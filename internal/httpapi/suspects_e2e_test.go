package httpapi_test

// The operator's view of the shadow line (issue 51), end to end through a
// real instance on Redis: the suspect is listed with its signals and its
// hashed address, counted in the stats and in waitroom_shadow_length, and
// cleared into the real line where a person arriving with it would stand.
// The place is taken in the shadow line by the test itself, on the
// instance's Redis (queue.Store.EnterShadow), so that the routes are tested
// apart from the signals that would put it there (package gatekeeper).

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestOperatorClearsASuspect: alice and bob wait, a bot takes a shadow
// place, carol arrives after it. The admin list shows the bot (behind
// bob's ticket); cleared, it stands third, carol moves from third to
// fourth, the stats and the log say so, and a second clear finds nothing.
func TestOperatorClearsASuspect(t *testing.T) {
	t.Parallel()
	in := apptest.Shop{Instance: apptest.Boot(t, apptest.Backend{Name: "redis", Redis: true}, nil)}
	admin := in.AdminAuth()
	q := apptest.UniqueID("shadowed")
	if r := in.Do("PUT", "/admin/v1/queues/"+q, admin, map[string]any{"paused": true}); r.Status != 200 {
		t.Fatalf("creating the queue: %d %s", r.Status, r.Raw)
	}
	alice, bob, bot, carol := apptest.UniqueID("alice"), apptest.UniqueID("bob"), apptest.UniqueID("bot"), apptest.UniqueID("carol")
	for _, u := range []string{alice, bob} {
		if r := in.Do("POST", entriesPath(q), in.As(u), nil); r.Num("position") == 0 {
			t.Fatalf("%s entering: %d %s", u, r.Status, r.Raw)
		}
	}
	store := redisstore.New(testenv.RedisClient(t), in.KeyPrefix)
	mark := suspect.Mark{Signals: []string{"address_range", "poll_rate"}, Address: "3f9a1c0e7b52d4a8"}
	st, err := store.EnterShadow(context.Background(), q, bot, mark)
	if err != nil || !st.Shadow {
		t.Fatalf("the bot's shadow place: %+v, %v", st, err)
	}
	if r := in.Do("POST", entriesPath(q), in.As(carol), nil); r.Num("position") != 3 {
		t.Fatalf("carol entering behind alice and bob: %d %s, want position 3", r.Status, r.Raw)
	}
	id := strconv.FormatInt(st.Ticket, 10)

	r := in.Do("GET", "/admin/v1/queues/"+q+"/suspects", admin, nil)
	list, _ := r.Body["suspects"].([]any)
	if r.Status != 200 || r.Body["shadowLength"] != 1.0 || len(list) != 1 {
		t.Fatalf("the list: %d %s", r.Status, r.Raw)
	}
	got := list[0].(map[string]any)
	delete(got, "joinedAt")
	want := map[string]any{"id": id, "signals": []any{"address_range", "poll_rate"}, "address": "3f9a1c0e7b52d4a8", "behind": 2.0}
	if d := cmp.Diff(want, got); d != "" || !strings.Contains(r.Raw, `"joinedAt":"`) {
		t.Errorf("the suspect listed (-want +got):\n%s\n%s", d, r.Raw)
	}
	if st := in.QueueStats(q); st.Num("length") != 3 || st.Num("shadowLength") != 1 || st.Num("shadowEnteredTotal") != 1 {
		t.Errorf("the stats with one suspect: %s", st.Raw)
	}
	if m := apptest.Metrics(t, in.Base); m[`waitroom_shadow_length{queue="`+q+`"}`] != 1 {
		t.Errorf("waitroom_shadow_length for %s: %v, want 1", q, m[`waitroom_shadow_length{queue="`+q+`"}`])
	}

	r = in.Do("POST", "/admin/v1/queues/"+q+"/suspects/"+id+"/clear", admin, nil)
	if r.Status != 200 || r.Body["cleared"] != true || r.Num("length") != 4 || r.Num("shadowLength") != 0 || r.Num("clearedTotal") != 1 {
		t.Fatalf("clearing %s: %d %s", id, r.Status, r.Raw)
	}
	for u, pos := range map[string]float64{alice: 1, bob: 2, bot: 3, carol: 4} {
		if r := in.StatusOf(q, u); r.Str("status") != "WAITING" || r.Num("position") != pos {
			t.Errorf("after the clear, %s: %s, want WAITING at %v", u, r.Raw, pos)
		}
	}
	if !strings.Contains(in.Logs.String(), "suspect cleared") || !strings.Contains(in.Logs.String(), "suspect="+id) {
		t.Errorf("the clear is not logged:\n%s", in.Logs)
	}
	if r := in.Do("POST", "/admin/v1/queues/"+q+"/suspects/"+id+"/clear", admin, nil); r.Status != 404 || r.ErrorCode() != "suspect_not_found" {
		t.Errorf("clearing %s again: %d %s, want 404 suspect_not_found", id, r.Status, r.Raw)
	}
	if st := in.QueueStats(q); st.Num("shadowLength") != 0 || st.Num("shadowEnteredTotal") != 1 || st.Num("clearedTotal") != 1 {
		t.Errorf("the stats after the clear: %s", st.Raw)
	}
}
