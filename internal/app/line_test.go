package app_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/apptest"
)

// The few checks of the line's answers the tests here share: the API's
// own end-to-end tests (internal/httpapi's queue_e2e_test.go) hold every
// answer to the contract; these tests only read a user's standing.

func entriesPath(q string) string { return "/api/v1/queues/" + q + "/entries" }
func mePath(q string) string      { return "/api/v1/queues/" + q + "/entries/me" }

// checkNotInQueue fails unless r is 200 NOT_IN_QUEUE, shaped as the
// contract has it.
func checkNotInQueue(t *testing.T, r apptest.Response) {
	t.Helper()
	if r.Status != 200 || r.Str("status") != "NOT_IN_QUEUE" {
		t.Fatalf("want 200 NOT_IN_QUEUE, got %d %s", r.Status, r.Raw)
	}
	want := []string{"status", "pollAfterSeconds"}
	slices.Sort(want)
	got := make([]string, 0, len(r.Body))
	for k := range r.Body {
		got = append(got, k)
	}
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fields of %s (-want +got):\n%s", r.Raw, d)
	}
	if v, ok := r.Body["pollAfterSeconds"]; !ok || v != nil {
		t.Errorf("NOT_IN_QUEUE pollAfterSeconds = %v, want null", r.Body["pollAfterSeconds"])
	}
}
