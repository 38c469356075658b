package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWrkRunExplains: a wrk run that finished no request, or not only 2xx,
// says what one of its requests got when sent alone, and what the server
// logged; one that answered only 2xx asks nothing.
func TestWrkRunExplains(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.Header.Get("Authorization") != "Bearer u" {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	logs := &serverLog{}
	fine := WrkRun{Requests: 10}
	fine.explain(context.Background(), "GET", srv.URL, http.Header{"Authorization": {"Bearer u"}}, logs)
	if fine.Alone != "" || asked.Load() != 0 {
		t.Errorf("a run of only 2xx: %q, %d requests sent alone", fine.Alone, asked.Load())
	}
	none := WrkRun{}
	none.explain(context.Background(), "GET", srv.URL, http.Header{"Authorization": {"Bearer u"}}, logs)
	if !none.AloneOK || !strings.HasPrefix(none.Alone, "200 after ") || !strings.HasSuffix(none.Alone, "; the server logged: nothing") {
		t.Errorf("a run of no request, the path fine: %v %q", none.AloneOK, none.Alone)
	}
	logs.Write([]byte("level=WARN msg=\"redis: i/o timeout\"\nsecond line\n"))
	refused := WrkRun{Requests: 5, Non2xx: 5}
	refused.explain(context.Background(), "GET", srv.URL, http.Header{"Authorization": {"Bearer someone else"}}, logs)
	if refused.AloneOK || !strings.Contains(refused.Alone, `401 after `) || !strings.Contains(refused.Alone, `{"error":{"code":"unauthorized"}}`) ||
		!strings.HasSuffix(refused.Alone, `; the server logged: level=WARN msg="redis: i/o timeout"`) {
		t.Errorf("a run of 401s: %v %q", refused.AloneOK, refused.Alone)
	}
}
