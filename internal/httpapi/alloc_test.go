package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// reusedWriter is a ResponseWriter that keeps its header map and body
// buffer between requests, as net/http's own does for a kept-alive
// connection, so only the handler's allocations are counted.
type reusedWriter struct {
	h    http.Header
	body []byte
	code int
}

func (w *reusedWriter) Header() http.Header  { return w.h }
func (w *reusedWriter) WriteHeader(code int) { w.code = code }
func (w *reusedWriter) Write(b []byte) (int, error) {
	w.body = append(w.body, b...)
	return len(b), nil
}

func (w *reusedWriter) reset() {
	clear(w.h)
	w.body, w.code = w.body[:0], 0
}

// TestHandlerAllocations bounds the allocations of one answer to enter
// again and to status, through the whole API handler (routing, who the
// caller is, the line, the answer) on the embedded store, for a user far
// back in a line of 1,000: a change that adds allocations to every poll
// says so in its diff, by raising a number here with its reason. The
// request and writer are reused, as a kept-alive connection's are.
func TestHandlerAllocations(t *testing.T) {
	ctx := context.Background()
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, time.Second, line), operate.New(store, line)
	c := queue.DefaultConfig()
	c.Paused, c.Join = true, queue.JoinAny
	if err := op.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	id := identity.New([]byte("an-allocation-test-secret-of-32-bytes"))
	srv := httpapi.New(httpapi.Options{Queue: svc, Identity: id, Logger: slog.New(slog.DiscardHandler), Gate: gatekeeper.New(gatekeeper.Options{Queue: svc, Claims: op})})
	for i := range 1000 {
		if _, err := svc.Enter(ctx, "q", fmt.Sprintf("u%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	jwt := id.SignJWT("u0900", time.Hour)
	for _, b := range []struct {
		name, method string
		budget       float64
		why          string
	}{
		// Named from a memory profile of this test (2026-12-03):
		//   go test -run 'TestHandlerAllocations/status' -memprofile m.out -memprofilerate=1 ./internal/httpapi/
		//   go tool pprof -sample_index=alloc_objects -top m.out
		{"status", "GET", 8, "the request id (its hex text, the text as a context value, the context, the request carrying it) " +
			"and the status-recording writer (ServeHTTP: 5); the route's path values (ServeMux: 1); the Content-Type header (1); " +
			"pollAfter's *int64 in the view (1). The entry JSON is appended without allocating (TestAnswerJSONAllocatesNothing)"},
		{"enter again", "POST", 8, "as status: entering again is answered from the store where the user stands, with the same allocations"},
	} {
		t.Run(b.name, func(t *testing.T) {
			r := httptest.NewRequest(b.method, "/api/v1/queues/q/entries", nil)
			if b.method == "GET" {
				r = httptest.NewRequest(b.method, "/api/v1/queues/q/entries/me", nil)
			}
			r.Header.Set("Authorization", "Bearer "+jwt)
			w := &reusedWriter{h: http.Header{}}
			serve := func() {
				w.reset()
				srv.ServeHTTP(w, r)
			}
			serve() // the JWT verified once and remembered, the snapshot taken
			if w.code != http.StatusOK {
				t.Fatalf("%s: %d %s", b.name, w.code, w.body)
			}
			n := testing.AllocsPerRun(200, serve)
			if w.code != http.StatusOK {
				t.Fatalf("%s: %d %s", b.name, w.code, w.body)
			}
			if n > b.budget {
				t.Errorf("%v allocations per %s answer, budget %v: %s", n, b.name, b.budget, b.why)
			} else {
				t.Logf("%v allocations per %s answer, budget %v", n, b.name, b.budget)
			}
		})
	}
}
