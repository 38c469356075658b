package httpapi_test

// Roles and named tokens, end to end (issue 56): the declarations walked
// with a token of each role, a revoke seen by every instance of one Redis
// within a second, and what works while the store is away.

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/staff"
)

// adminOp is one admin operation of the contract and its declared role.
type adminOp struct {
	method, path string
	need         staff.Role
}

// adminOps reads every admin operation of openapi.yaml with its
// x-waitroom-role (none declared: admin, as the server takes it).
func adminOps(t *testing.T) []adminOp {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(waitroom.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []adminOp
	for path, item := range doc.Paths {
		if !strings.HasPrefix(path, "/admin/v1/") {
			continue
		}
		for method, op := range item {
			fields, ok := op.(map[string]any)
			if !ok || strings.HasPrefix(method, "x-") || method == "parameters" {
				continue
			}
			need, _ := fields["x-waitroom-role"].(string)
			ops = append(ops, adminOp{strings.ToUpper(method), path, staff.Role(cmpOr(need, "admin"))})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].method+ops[i].path < ops[j].method+ops[j].path })
	if len(ops) < 20 {
		t.Fatalf("the contract has %d admin operations", len(ops))
	}
	return ops
}

func cmpOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// mintTokens makes a named token of each role through POST
// /admin/v1/tokens, as the admin token.
func mintTokens(t *testing.T, in *apptest.Instance) map[staff.Role]string {
	t.Helper()
	tokens := map[staff.Role]string{}
	for _, role := range staff.Roles {
		r := in.Do("POST", "/admin/v1/tokens", in.AdminAuth(), map[string]any{"name": apptest.UniqueID(string(role)), "role": role})
		if r.Status != http.StatusCreated || !staff.LooksLikeToken(r.Str("token")) {
			t.Fatalf("minting a %s token: %d %s", role, r.Status, r.Raw)
		}
		tokens[role] = "Bearer " + r.Str("token")
	}
	return tokens
}

// expectRole checks one answer: 403 forbidden_role naming need (and
// field) exactly when held is below need, never 403 otherwise.
func expectRole(t *testing.T, what string, r apptest.Response, held, need staff.Role, field string) {
	t.Helper()
	refused := r.Status == http.StatusForbidden
	switch {
	case held.Allows(need) && refused:
		t.Errorf("%s as %s (needs %s): 403 %s", what, held, need, r.Raw)
	case !held.Allows(need) && !refused:
		t.Errorf("%s as %s (needs %s): %d %s, want 403 forbidden_role", what, held, need, r.Status, r.Raw)
	case refused:
		e, _ := r.Body["error"].(map[string]any)
		if r.ErrorCode() != "forbidden_role" || e["role"] != string(need) || field != "" && e["field"] != field {
			t.Errorf("%s as %s: %s, want forbidden_role naming role %s and field %q", what, held, r.Raw, need, field)
		}
	}
}

// TestRolesWalkTheDeclarations: with a token of each role, every admin
// operation of the contract and every settable setting through the PATCH
// are refused 403 exactly where the declarations say, on both stores.
func TestRolesWalkTheDeclarations(t *testing.T) {
	t.Parallel()
	ops := adminOps(t)
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q, product := apptest.UniqueID("roles"), apptest.UniqueID("tee")
			in.PutQueue(q, map[string]any{"paused": true})
			in.PutProduct(product, "Tee", 5, "")
			tokens := mintTokens(t, in)
			for _, op := range ops {
				for _, role := range staff.Roles {
					path, body := walkRequest(op, q, product, role)
					expectRole(t, op.method+" "+op.path, in.Do(op.method, path, tokens[role], body), role, op.need, "")
				}
			}
			walkSettings(t, in, q, tokens)
		})
	}
}

// walkRequest is a request of op that the route takes when allowed.
func walkRequest(op adminOp, q, product string, role staff.Role) (string, any) {
	path := strings.NewReplacer("{queue}", q, "{name}", "no-such-token").Replace(op.path)
	if strings.HasPrefix(op.path, "/admin/v1/products/") {
		path = strings.Replace(path, "{id}", product, 1)
	}
	path = strings.Replace(path, "{id}", "1", 1) // a suspect that is not there: 404
	bodies := map[string]any{
		"PUT /admin/v1/queues/{queue}":          map[string]any{"paused": true},
		"PATCH /admin/v1/queues/{queue}":        map[string]any{},
		"POST /admin/v1/queues/{queue}/restock": map[string]any{"unitsLeft": 5},
		"POST /admin/v1/queues/{queue}/codes":   map[string]any{"lane": "invited", "codes": []string{}},
		"PUT /admin/v1/products/{id}":           map[string]any{"name": "Tee", "stock": 5},
		"POST /admin/v1/products/{id}/restock":  map[string]any{"quantity": 1},
		"POST /admin/v1/tokens":                 map[string]any{"name": apptest.UniqueID("walk-" + string(role)), "role": "viewer"},
	}
	return path, bodies[op.method+" "+op.path]
}

// walkSettings PATCHes every settable setting to a value other than the
// stored one with each role: refused exactly below max(operator, its
// row's role), naming it, and nothing written; a value sent as stored
// needs only the route's role.
func walkSettings(t *testing.T, in *apptest.Instance, q string, tokens map[staff.Role]string) {
	t.Helper()
	path := "/admin/v1/queues/" + q
	for _, set := range queue.Settings {
		if set.ReadOnly {
			continue
		}
		for _, role := range staff.Roles {
			need, field := set.Role, set.Name
			if !role.Allows(staff.Operator) {
				need, field = staff.Operator, "" // the route's own, refused first
			}
			stored := in.QueueStats(q).Body[set.Name]
			r := in.Do("PATCH", path, tokens[role], map[string]any{set.Name: another(set, stored)})
			expectRole(t, "PATCH "+set.Name, r, role, need, field)
			if r.Status == http.StatusForbidden {
				if after := in.QueueStats(q).Body[set.Name]; !jsonEqual(after, stored) {
					t.Errorf("a refused PATCH of %s wrote it: %v → %v", set.Name, stored, after)
				}
			}
			if role == staff.Operator {
				same := in.Do("PATCH", path, tokens[role], map[string]any{set.Name: stored})
				if same.Status != http.StatusOK {
					t.Errorf("PATCH %s as stored, as operator: %d %s, want 200 (it changes nothing)", set.Name, same.Status, same.Raw)
				}
			}
		}
	}
}

// another is a value of set other than cur (as the admin JSON has it),
// within its range where one can be found without knowing the others.
func another(set queue.Setting, cur any) any {
	switch set.Kind {
	case queue.Number:
		return cur.(float64) / 2
	case queue.Integer, queue.Duration:
		n := int64(cur.(float64))
		switch {
		case n == 0 && set.ZeroMeansOff:
			return int64(set.Min)
		case float64(n) > set.Min:
			return n - 1
		}
		return n + 1
	case queue.Bool:
		return !cur.(bool)
	case queue.Instant:
		if cur != nil {
			return ""
		}
		if set.Name == "closesAt" {
			return "2099-06-01T00:00:00Z"
		}
		return "2099-01-01T00:00:00Z"
	case queue.Choice:
		for _, c := range set.Choices {
			if c != cur {
				return c
			}
		}
	case queue.TextByLanguage:
		return "walked " + time.Now().Format(time.RFC3339Nano)
	case queue.PhaseList:
		return json.RawMessage(`[{"name":"walk","startsAt":"2099-01-01T00:00:00Z","overrides":{"ratePerSecond":5}}]`)
	case queue.LaneList:
		return json.RawMessage(`[{"name":"public","share":0.5},{"name":"invited","share":0.5,"codes":true}]`)
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestRevokeReachesEveryInstanceWithinASecond: three instances on one
// Redis; a token each has checked is revoked through the first, and every
// request any of them takes a second after the revoke's answer or later
// is refused.
func TestRevokeReachesEveryInstanceWithinASecond(t *testing.T) {
	t.Parallel()
	redis := apptest.Backend{Name: "redis", Redis: true}
	first := apptest.Boot(t, redis, nil)
	instances := []*apptest.Instance{first}
	for range 2 {
		instances = append(instances, apptest.Boot(t, redis, func(c *app.Config) { c.KeyPrefix = first.KeyPrefix }))
	}
	r := first.Do("POST", "/admin/v1/tokens", first.AdminAuth(), map[string]any{"name": "leaked", "role": "operator"})
	if r.Status != http.StatusCreated {
		t.Fatalf("minting: %d %s", r.Status, r.Raw)
	}
	token := "Bearer " + r.Str("token")
	for i, in := range instances {
		if r := in.Do("GET", "/admin/v1/queues", token, nil); r.Status != http.StatusOK {
			t.Fatalf("instance %d before the revoke: %d %s", i, r.Status, r.Raw)
		}
	}
	if r := first.Do("DELETE", "/admin/v1/tokens/leaked", first.AdminAuth(), nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoking: %d %s", r.Status, r.Raw)
	}
	revoked := time.Now()
	for i, in := range instances {
		for {
			sent := time.Now()
			r := in.Do("GET", "/admin/v1/queues", token, nil)
			if r.Status == http.StatusUnauthorized {
				t.Logf("instance %d refuses the revoked token %v after the revoke", i, time.Since(revoked).Round(time.Millisecond))
				break
			}
			if r.Status != http.StatusOK || !sent.Before(revoked.Add(staff.CheckFor)) {
				t.Fatalf("instance %d, %v after the revoke: %d %s, want 401", i, sent.Sub(revoked), r.Status, r.Raw)
			}
			time.Sleep(20 * time.Millisecond) // polling for the change, as apptest.WaitStatus does
		}
	}
}

// TestTokensWhileTheStoreIsAway: Redis stopped, --admin-token still
// works, a named token checked within the last second still works, and
// one not checked is 503 with Retry-After; a second on, so is the first.
func TestTokensWhileTheStoreIsAway(t *testing.T) {
	t.Parallel()
	in, srv := apptest.BootOnPrivateRedis(t)
	tokens := mintTokens(t, in)
	checked, unchecked := tokens[staff.Viewer], tokens[staff.Operator]
	const settings = "/admin/v1/queue-settings" // reads no store: only the check does
	sent := time.Now()
	if r := in.Do("GET", settings, checked, nil); r.Status != http.StatusOK {
		t.Fatalf("before: %d %s", r.Status, r.Raw)
	}
	answered := time.Now()
	srv.Stop()
	asked := time.Now()
	r := in.Do("GET", settings, checked, nil)
	switch {
	case time.Since(sent) < staff.CheckFor && r.Status != http.StatusOK:
		t.Errorf("a token checked less than a second before, store away: %d %s, want 200", r.Status, r.Raw)
	case asked.Sub(answered) >= staff.CheckFor && r.Status != http.StatusServiceUnavailable:
		t.Errorf("a token checked over a second before, store away: %d %s, want 503", r.Status, r.Raw)
	case r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable:
		t.Errorf("a token checked about a second before, store away: %d %s", r.Status, r.Raw)
	}
	if r := in.Do("GET", settings, in.AdminAuth(), nil); r.Status != http.StatusOK {
		t.Errorf("--admin-token, store away: %d %s, want 200", r.Status, r.Raw)
	}
	if r := in.Do("GET", settings, unchecked, nil); r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("a token never checked, store away: %d %v %s, want 503 with Retry-After", r.Status, r.Header, r.Raw)
	}
	deadline := time.Now().Add(apptest.Patience)
	for in.Do("GET", settings, checked, nil).Status != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("a checked token still works long after the store went away")
		}
		time.Sleep(50 * time.Millisecond) // polling for the change, as apptest.WaitStatus does
	}
}
