package app_test

import "testing"

func TestEnterAndBecomeReady(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			in := boot(t, b, nil)
			r := in.do("POST", "/api/v1/queues/default/entries", in.as("alice"), nil)
			if r.status != 200 || (r.str("status") != "WAITING" && r.str("status") != "READY") {
				t.Fatalf("enter: %d %s", r.status, r.raw)
			}
			tok := in.waitReady("default", "alice")
			if len(tok) < 22 {
				t.Fatalf("token %q is shorter than 128 bits of base64", tok)
			}
		})
	}
}
