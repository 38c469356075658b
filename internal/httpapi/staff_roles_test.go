package httpapi

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/staff"
)

// TestEveryAdminRouteDeclaresItsRole: each admin route server.go
// registers has its role declared in openapi.yaml, a role there is one of
// the three, and a route the contract does not declare needs admin.
func TestEveryAdminRouteDeclaresItsRole(t *testing.T) {
	roles := routeRoles(waitroom.OpenAPI)
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`m\.HandleFunc\("([A-Z]+ /admin/v1/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 20 {
		t.Fatalf("found %d admin routes in server.go: the pattern no longer matches", len(routes))
	}
	for _, m := range routes {
		role, ok := roles[m[1]]
		if !ok {
			t.Errorf("%s: openapi.yaml declares no %s", m[1], roleExtension)
			continue
		}
		if _, err := staff.ParseRole(string(role)); err != nil {
			t.Errorf("%s: %v", m[1], err)
		}
	}
	for pattern := range roles {
		if !strings.Contains(pattern, " /admin/v1/") {
			t.Errorf("%s declares a role, but is no admin route", pattern)
		}
	}
	s := &Server{roles: roles}
	if got := s.RouteRole("DELETE /admin/v1/everything"); got != staff.Admin {
		t.Errorf("an undeclared route needs %q, want admin", got)
	}
	if got := s.RouteRole("GET /admin/v1/queues/{queue}/report"); got != staff.Viewer {
		t.Errorf("the report needs %q, want viewer", got)
	}
	if got := (&Server{roles: routeRoles([]byte("not: [yaml"))}).RouteRole("GET /admin/v1/queues"); got != staff.Admin {
		t.Errorf("with no contract, listing queues needs %q, want admin", got)
	}
}
