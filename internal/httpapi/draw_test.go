package httpapi_test

// A draw anyone can check (issue 57), as the API publishes it: the
// ledger's commitments (never a seed), the record of a drawn one, the
// front document's pending commitment, a person's participant id in the
// pre-queue, the schedule's list. The ledger here is a fake (the stores'
// own are tested in storetest); the whole path on real stores is
// internal/app's TestADrawAnyoneCanCheck.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// fakeLedger is a queue's draws as a store would keep them: seeds in
// clear, records by commitment. It counts the reads of the list.
type fakeLedger struct {
	mu      sync.Mutex
	draws   map[string][]draw.Committed
	records map[string]draw.Record
	err     error
	reads   atomic.Int64
}

func (l *fakeLedger) Draws(_ context.Context, q string) ([]draw.Committed, error) {
	l.reads.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	return append([]draw.Committed(nil), l.draws[q]...), nil
}

func (l *fakeLedger) DrawRecord(_ context.Context, q, commitment string) (draw.Record, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[q+"/"+commitment]
	return r, ok, l.err
}

// drawFixture is an API server on the embedded store with the fake
// ledger, and the queues "sale" (three commitments: withdrawn, drawn,
// pending), "gone" (a ledger, no queue) and "plain" (a queue, no ledger).
type drawFixture struct {
	srv          *httpapi.Server
	ledger       *fakeLedger
	id           *identity.Identity
	participants draw.Participants
	withdrawn    draw.Committed
	drawn        draw.Committed
	pending      draw.Committed
	record       draw.Record
}

const drawAdminToken = "a-draw-test-admin-token-of-enough-bytes"

func newDrawFixture(t *testing.T) *drawFixture {
	t.Helper()
	ctx := context.Background()
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, time.Second, line), operate.New(store, line)
	// Openings ahead, whenever the test runs: the front document shows a
	// commitment only while its opening is.
	at := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	for _, q := range []string{"sale", "plain"} {
		c := queue.DefaultConfig()
		c.Paused, c.Join = true, queue.JoinAny
		if q == "sale" {
			c.OpensAt = at.Add(2 * time.Hour) // the pending commitment's
		}
		if err := op.PutConfig(ctx, q, c); err != nil {
			t.Fatal(err)
		}
	}
	f := &drawFixture{ledger: &fakeLedger{draws: map[string][]draw.Committed{}, records: map[string]draw.Record{}},
		id: identity.New([]byte("a-draw-test-secret-of-32-bytes-or-more")), participants: draw.NewParticipants([]byte("participants' key"))}
	f.withdrawn = committed(1, "sale", at, draw.Withdrawn, at.Add(time.Minute))
	f.drawn = committed(2, "sale", at.Add(time.Hour), draw.Drawn, time.Time{})
	f.pending = committed(3, "sale", at.Add(2*time.Hour), draw.Pending, time.Time{})
	f.pending.Beacon = &draw.Beacon{URL: "http://beacon.example", Round: 42}
	ids := []string{f.participants.Of("sale", "alice").ID, f.participants.Of("sale", "bob").ID}
	rec, err := draw.Draw(f.drawn, ids, nil, 7, at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.record = rec
	f.ledger.draws["sale"] = []draw.Committed{f.withdrawn, f.drawn, f.pending}
	f.ledger.draws["gone"] = []draw.Committed{committed(4, "gone", at, draw.Withdrawn, at)}
	f.ledger.records["sale/"+f.drawn.Hash] = rec
	f.srv = httpapi.New(httpapi.Options{Queue: svc, Operate: op, Identity: f.id, Logger: slog.New(slog.DiscardHandler),
		Gate: gatekeeper.New(gatekeeper.Options{Queue: svc, Claims: op}), AdminToken: drawAdminToken,
		Draws: f.ledger, Participants: &f.participants, NewQueueConfig: queue.DefaultConfig()})
	return f
}

// committed is a commitment of queue's opening at opensAt whose seed is
// n repeated (so a test can look for it), as a store keeps it.
func committed(n byte, q string, opensAt time.Time, state draw.State, withdrawnAt time.Time) draw.Committed {
	c := draw.NewCommittedWith(draw.Seed(bytes.Repeat([]byte{n}, 32)), q, opensAt, nil)
	c.MadeAt, c.State, c.WithdrawnAt, c.Epoch = opensAt.Add(-time.Hour), state, withdrawnAt, 1
	return c
}

type drawAnswer struct {
	status int
	header http.Header
	raw    string
}

func (f *drawFixture) get(t *testing.T, path string, header ...string) drawAnswer {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	return drawAnswer{w.Code, w.Header(), w.Body.String()}
}

func drawErrorCode(t *testing.T, raw string) string {
	t.Helper()
	var e struct{ Error struct{ Code string } }
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return e.Error.Code
}

func TestDrawRoute(t *testing.T) {
	f := newDrawFixture(t)
	path := func(q, query string) string { return "/api/v1/queues/" + q + "/draw" + query }
	for _, c := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"a queue with no ledger", path("nosuchqueue", ""), 404, "queue_not_found"},
		{"a name no queue can have", path("bad*name", ""), 400, "invalid_queue_name"},
		{"a commitment too short", path("sale", "?commitment=abc"), 400, "invalid_commitment"},
		{"a commitment in capitals", path("sale", "?commitment="+strings.ToUpper(f.drawn.Hash)), 400, "invalid_commitment"},
		{"a commitment not hex", path("sale", "?commitment="+strings.Repeat("g", 64)), 400, "invalid_commitment"},
		{"two commitments", path("sale", "?commitment="+f.drawn.Hash+"&commitment="+f.drawn.Hash), 400, "invalid_commitment"},
		{"an empty commitment", path("sale", "?commitment="), 400, "invalid_commitment"},
		{"a commitment never made", path("sale", "?commitment="+strings.Repeat("0", 64)), 404, "draw_not_found"},
		{"a pending commitment", path("sale", "?commitment="+f.pending.Hash), 404, "draw_not_found"},
		{"a withdrawn commitment", path("sale", "?commitment="+f.withdrawn.Hash), 404, "draw_not_found"},
		{"another queue's commitment", path("plain", "?commitment="+f.drawn.Hash), 404, "draw_not_found"},
		{"a participant too short", path("sale", "?participant=abc"), 400, "invalid_participant"},
		{"a participant in capitals", path("sale", "?participant="+strings.ToUpper(f.record.Order[0])), 400, "invalid_participant"},
		{"two participants", path("sale", "?participant="+f.record.Order[0]+"&participant="+f.record.Order[1]), 400, "invalid_participant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := f.get(t, c.path)
			if a.status != c.status || drawErrorCode(t, a.raw) != c.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.raw, c.status, c.code)
			}
		})
	}

	t.Run("a queue with no opening ever", func(t *testing.T) {
		a := f.get(t, path("plain", ""))
		if a.status != 200 || a.raw != `{"queue":"plain","commitments":[]}`+"\n" {
			t.Fatalf("%d %q", a.status, a.raw)
		}
	})
	t.Run("a deleted queue's ledger stays published", func(t *testing.T) {
		if a := f.get(t, path("gone", "")); a.status != 200 || !strings.Contains(a.raw, `"state":"withdrawn"`) {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	})
	t.Run("a participant's standing, not everyone's record", func(t *testing.T) {
		for i, id := range f.record.Order {
			a := f.get(t, path("sale", "?participant="+id))
			var got struct {
				Commitments []json.RawMessage
				Standing    map[string]any
				Record      any
			}
			if err := json.Unmarshal([]byte(a.raw), &got); err != nil || a.status != 200 {
				t.Fatalf("%d %s: %v", a.status, a.raw, err)
			}
			want := map[string]any{"participant": id, "commitment": f.drawn.Hash, "place": float64(i + 1),
				"of": float64(len(f.record.Order)), "ticket": float64(f.record.Tickets[i])}
			if diff := cmp.Diff(want, got.Standing); diff != "" || got.Record != nil || len(got.Commitments) != 3 {
				t.Fatalf("participant %s: %s (-want +got):\n%s", id, a.raw, diff)
			}
		}
		if a := f.get(t, path("sale", "?participant="+strings.Repeat("ab", 16))); a.status != 200 || strings.Contains(a.raw, "standing") || strings.Contains(a.raw, "record") {
			t.Fatalf("one who took no part: %d %s, want the ledger alone", a.status, a.raw)
		}
	})
	for _, query := range []string{"", "?commitment=" + f.drawn.Hash} {
		t.Run("the ledger and the record"+query, func(t *testing.T) {
			a := f.get(t, path("sale", query))
			if a.status != 200 || a.header.Get("Cache-Control") != "public, max-age=1, stale-while-revalidate=1" {
				t.Fatalf("%d %v %s", a.status, a.header, a.raw)
			}
			f.checkPublished(t, a.raw)
		})
	}
}

// checkPublished holds the draw route's answer for "sale" to the ledger:
// every commitment, oldest first, with no seed; the drawn one's record,
// whose seed is the only one in the answer.
func (f *drawFixture) checkPublished(t *testing.T, raw string) {
	t.Helper()
	var got struct {
		Queue       string
		Commitments []map[string]any
		Record      draw.Record
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	want := []draw.Committed{f.withdrawn, f.drawn, f.pending}
	if got.Queue != "sale" || len(got.Commitments) != len(want) {
		t.Fatalf("%s", raw)
	}
	for i, c := range want {
		g := got.Commitments[i]
		if g["commitment"] != c.Hash || g["state"] != string(c.State) || g["opensAt"] != c.OpensAt.Format(time.RFC3339Nano) {
			t.Errorf("commitments[%d] = %v, want %s %s", i, g, c.Hash, c.State)
		}
		for _, k := range []string{"seed", "epoch", "beaconKey"} {
			if _, ok := g[k]; ok {
				t.Errorf("commitments[%d] carries %s: %v", i, k, g)
			}
		}
	}
	if got.Commitments[0]["withdrawnAt"] == nil || got.Commitments[1]["withdrawnAt"] != nil {
		t.Errorf("withdrawnAt: %v, %v", got.Commitments[0], got.Commitments[1])
	}
	if b, _ := got.Commitments[2]["beacon"].(map[string]any); b["url"] != "http://beacon.example" || b["round"] != 42.0 {
		t.Errorf("the pending commitment's beacon: %v", got.Commitments[2])
	}
	if err := draw.Verify(got.Record); err != nil || got.Record.Seed != f.drawn.Seed.Hex() {
		t.Errorf("the record: %v, seed %s", err, got.Record.Seed)
	}
	for _, c := range []draw.Committed{f.withdrawn, f.pending} {
		if strings.Contains(raw, c.Seed.Hex()) {
			t.Errorf("the seed of the %s commitment is published: %s", c.State, raw)
		}
	}
	if strings.Count(raw, f.drawn.Seed.Hex()) != 1 {
		t.Errorf("the drawn seed appears %d times, want once (in the record)", strings.Count(raw, f.drawn.Seed.Hex()))
	}
}

func TestDrawRouteWhileTheLedgerFails(t *testing.T) {
	f := newDrawFixture(t)
	f.ledger.err = queue.ErrUnavailable
	if a := f.get(t, "/api/v1/queues/sale/draw"); a.status != 503 || drawErrorCode(t, a.raw) != "unavailable" {
		t.Fatalf("draw: %d %s, want 503 unavailable", a.status, a.raw)
	}
	if a := f.get(t, "/api/v1/queues/sale/front"); a.status != 200 || strings.Contains(a.raw, `"draw"`) {
		t.Fatalf("front: %d %s, want 200 without a draw", a.status, a.raw)
	}
}

// TestTheFrontDocumentShowsThePendingCommitment: the newest commitment
// while it is pending, and where its record will be; none once it is
// drawn; and the ledger read at most once a second however many ask.
func TestTheFrontDocumentShowsThePendingCommitment(t *testing.T) {
	f := newDrawFixture(t)
	start := time.Now()
	var doc struct {
		Draw *struct{ Commitment, URL string }
	}
	for range 30 {
		a := f.get(t, "/api/v1/queues/sale/front")
		if err := json.Unmarshal([]byte(a.raw), &doc); err != nil || a.status != 200 {
			t.Fatalf("%d %v %s", a.status, err, a.raw)
		}
		if doc.Draw == nil || doc.Draw.Commitment != f.pending.Hash || doc.Draw.URL != "/api/v1/queues/sale/draw" {
			t.Fatalf("front's draw: %+v, want %s", doc.Draw, f.pending.Hash)
		}
		f.get(t, "/api/v1/queues/sale/draw")
	}
	if reads, most := f.ledger.reads.Load(), 1+int64(time.Since(start)/time.Second); reads > most {
		t.Errorf("60 answers in %v read the ledger %d times, want at most %d", time.Since(start), reads, most)
	}
	if a := f.get(t, "/api/v1/queues/plain/front"); strings.Contains(a.raw, `"draw"`) {
		t.Errorf("a queue with no ledger: %s", a.raw)
	}
	if strings.Contains(f.get(t, "/api/v1/queues/sale/front").raw, f.pending.Seed.Hex()) {
		t.Error("the front document carries the pending seed")
	}
}

// TestThePreQueueAnswerCarriesTheParticipant: a person waiting for an
// opening is told their id in its draw and the salt that proves it is
// theirs; someone in a line with no opening is told nothing of a draw.
func TestThePreQueueAnswerCarriesTheParticipant(t *testing.T) {
	f := newDrawFixture(t)
	opensAt := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	put := httptest.NewRequest("PUT", "/admin/v1/queues/opening", strings.NewReader(`{"entry":"any","opensAt":"`+opensAt.Format(time.RFC3339Nano)+`"}`))
	put.Header.Set("Authorization", "Bearer "+drawAdminToken)
	w := httptest.NewRecorder()
	if f.srv.ServeHTTP(w, put); w.Code != 200 {
		t.Fatalf("PUT: %d %s", w.Code, w.Body)
	}
	for _, c := range []struct{ q, user, method, path string }{
		{"opening", "alice", "POST", "/api/v1/queues/opening/entries"},
		{"opening", "alice", "GET", "/api/v1/queues/opening/entries/me"},
		{"plain", "bob", "POST", "/api/v1/queues/plain/entries"},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("Authorization", "Bearer "+f.id.SignJWT(c.user, time.Hour))
		w := httptest.NewRecorder()
		f.srv.ServeHTTP(w, r)
		var got struct {
			Status  string
			OpensAt *time.Time
			Draw    *draw.Participant
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 || got.Status != "WAITING" {
			t.Fatalf("%s %s: %d %v %s", c.method, c.path, w.Code, err, w.Body)
		}
		want := f.participants.Of(c.q, c.user)
		switch {
		case got.OpensAt == nil && got.Draw != nil:
			t.Errorf("%s %s: a draw outside a pre-queue: %s", c.method, c.path, w.Body)
		case got.OpensAt != nil && (got.Draw == nil || *got.Draw != want || draw.ParticipantID(got.Draw.Salt, c.user) != got.Draw.ID):
			t.Errorf("%s %s: %s, want the draw %+v", c.method, c.path, w.Body, want)
		}
		if c.q == "opening" && got.OpensAt == nil {
			t.Errorf("%s %s: not in the pre-queue: %s", c.method, c.path, w.Body)
		}
	}
}

// TestTheScheduleListsTheCommitments: as published, no seed.
func TestTheScheduleListsTheCommitments(t *testing.T) {
	f := newDrawFixture(t)
	a := f.get(t, "/admin/v1/queues/sale/schedule", "Authorization", "Bearer "+drawAdminToken)
	var got struct {
		Commitments []struct{ Commitment, State string }
	}
	if err := json.Unmarshal([]byte(a.raw), &got); err != nil || a.status != 200 || len(got.Commitments) != 3 ||
		got.Commitments[0].Commitment != f.withdrawn.Hash || got.Commitments[2].State != "pending" {
		t.Fatalf("%d %v %s", a.status, err, a.raw)
	}
	for _, c := range []draw.Committed{f.withdrawn, f.drawn, f.pending} {
		if strings.Contains(a.raw, c.Seed.Hex()) {
			t.Errorf("the schedule carries the %s commitment's seed", c.State)
		}
	}
	if a := f.get(t, "/admin/v1/queues/plain/schedule", "Authorization", "Bearer "+drawAdminToken); !strings.Contains(a.raw, `"commitments":[]`) {
		t.Errorf("no ledger: %s", a.raw)
	}
}
