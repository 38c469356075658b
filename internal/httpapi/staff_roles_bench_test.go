package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/staff"
)

// BenchmarkAdminCheck is the admin guard's cost per request (issue 56):
// --admin-token against a named token whose check is cached (within its
// second), through adminActor and the one check, to a handler that does
// nothing. docs/benchmarks.md has the figures and the command.
func BenchmarkAdminCheck(b *testing.B) {
	tokens := staff.NewChecker(memstore.New(time.Now), nil)
	named, _, err := tokens.Create(context.Background(), "bench", staff.Operator, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{AdminToken: "admin-0123456789abcdef0123456789abcdef", Tokens: tokens, OpenAPI: waitroom.OpenAPI})
	h := s.admin(func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct{ name, bearer string }{{"admin-token", s.AdminToken}, {"named-token", named}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/admin/v1/queues", nil)
			r.Pattern = "GET /admin/v1/queues"
			r.Header.Set("Authorization", "Bearer "+c.bearer)
			w := httptest.NewRecorder()
			for b.Loop() {
				h(w, r)
			}
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}
