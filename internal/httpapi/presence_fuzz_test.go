package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzPresenceBody: whatever a beacon holds, reading it never panics and
// fails only as 400 invalid_body; a body it takes is one JSON object whose
// one field is hidden, a boolean, and the flag read is that boolean.
func FuzzPresenceBody(f *testing.F) {
	for _, s := range []struct{ body, ctype string }{
		{`{"hidden":true}`, "text/plain;charset=UTF-8"}, {`{"hidden": false}`, "application/json"},
		{` {"hidden":true} `, ""}, {`{"hidden":true}{}`, "text/plain"}, {`{"hidden":1}`, "text/plain"},
		{`{"Hidden":true}`, "text/plain"}, {`{"hidden":true,"hidden":false}`, "text/plain"},
		{`{"hidden":true}`, "application/x-www-form-urlencoded"}, {`null`, "text/plain"}, {``, ""},
	} {
		f.Add(s.body, s.ctype)
	}
	f.Fuzz(func(t *testing.T, body, ctype string) {
		r := httptest.NewRequest("POST", "/api/v1/queues/q/entries/me/presence", bytes.NewReader([]byte(body)))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		hidden, err := presenceBody(r)
		if err != nil {
			if row, _ := lookupError(err); row.code != "invalid_body" {
				t.Fatalf("error %v answers %s, want invalid_body", err, row.code)
			}
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &fields); err != nil || len(fields) != 1 {
			t.Fatalf("took %q: not one object of one field (%v)", body, err)
		}
		var got bool
		for name, raw := range fields {
			// json matches field names without case, as the decoder does.
			if err := json.Unmarshal(raw, &got); err != nil || got != hidden || !bytes.EqualFold([]byte(name), []byte("hidden")) {
				t.Fatalf("took %q as hidden %v", body, hidden)
			}
		}
	})
}
