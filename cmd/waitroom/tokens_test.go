package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/staff"
)

// `waitroom tokens create|list|revoke` against a running instance: create
// prints the token once, which then works with its role; list shows it
// without the token; revoke ends it; a refusal carries the API's code.
func TestTokensCommand(t *testing.T) {
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	withToken := env(map[string]string{"WAITROOM_ADMIN_TOKEN": in.AdminToken})
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := tokensCmd(append(args, "--addr", in.Base), withToken, time.Now(), &out, &errOut)
		return out.String(), err
	}
	// The flags go after the subcommand's own arguments as a shell gives them.
	printed, err := run("create", "--name", "night-ops", "--role", "operator", "--expires", "720h")
	secret := strings.TrimSpace(printed)
	if err != nil || !staff.LooksLikeToken(secret) {
		t.Fatalf("create: %q %v", printed, err)
	}
	if r := in.Do("POST", "/admin/v1/queues/default/sold-out", "Bearer "+secret, nil); r.Status != 200 {
		t.Errorf("the new operator token selling out: %d %s", r.Status, r.Raw)
	}
	if r := in.Do("PUT", "/admin/v1/queues/default", "Bearer "+secret, map[string]any{}); r.ErrorCode() != "forbidden_role" {
		t.Errorf("the new operator token replacing a queue: %d %s, want forbidden_role", r.Status, r.Raw)
	}
	list, err := run("list")
	if err != nil || !strings.HasPrefix(list, "night-ops\toperator\tcreated ") || strings.Contains(list, secret) || !strings.Contains(list, "last used 20") {
		t.Errorf("list: %q %v", list, err)
	}
	if _, err := run("create", "--name", "night-ops", "--role", "viewer"); err == nil || !strings.Contains(err.Error(), "409 token_exists") {
		t.Errorf("a second create of one name: %v, want 409 token_exists", err)
	}
	if out, err := run("revoke", "night-ops"); err != nil || out != "night-ops: revoked\n" {
		t.Errorf("revoke: %q %v", out, err)
	}
	if r := in.Do("GET", "/admin/v1/queues", "Bearer "+secret, nil); r.Status != 401 {
		t.Errorf("the revoked token: %d %s, want 401", r.Status, r.Raw)
	}
	if _, err := run("revoke", "night-ops"); err == nil || !strings.Contains(err.Error(), "404 token_not_found") {
		t.Errorf("revoking it again: %v", err)
	}
	if _, err := run("rotate"); err == nil {
		t.Error("an unknown subcommand ran")
	}
}
