package repolint_test

import "testing"

// runOpenAPIAudit exercises GET /admin/v1/audit (issue 56): the log after
// the changes the contract's run made, and its refusals.
func runOpenAPIAudit(t *testing.T, k *oaChecker, admin string) {
	t.Helper()
	r := k.call(t, oaCase{method: "GET", path: "/admin/v1/audit?limit=5&since=2020-01-01T00:00:00Z", auth: admin, status: 200})
	if entries, _ := r.Body["entries"].([]any); len(entries) == 0 {
		t.Errorf("the audit log after the run's changes: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/audit?since=yesterday", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/audit?limit=1001", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/audit", auth: "Bearer wrong", status: 401, code: "admin_unauthorized"})
}
