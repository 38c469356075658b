package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/accesscode"
)

// FuzzCodesCSV: whatever a CSV upload holds, reading it never panics, an
// error is only a 400 or a 413, every code kept is well formed and in a
// lane that takes codes, each hash is kept once, and the rejected lines
// listed are at most 20, each a line of the file.
func FuzzCodesCSV(f *testing.F) {
	good := accesscode.New()
	for _, s := range []string{
		"code,lane\n" + good + ",invited\n",
		"lane,uses,code,expiresAt\ninvited,2," + good + ",2099-01-01T00:00:00Z\ninvited,1," + good + ",\n",
		"\ufeffCODE,LANE\n" + good + ",gold\n", "code\n" + good + "\n", "code,lane,code\n", "",
		"code,lane\n\"" + good + "\n", "code,lane\na,b,c\n\"x\"y,invited\n" + good + ",invited\n",
		"code,lane,uses\n" + good + ",invited,-5\n" + good + ",invited,99999999999999999999\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b := &codesBatch{lanes: map[string]bool{"invited": true}, seen: map[string]bool{}, rejectedLines: []int{}}
		err := b.readCSV(strings.NewReader(body))
		if err != nil {
			if row, _ := lookupError(err); row.status != 400 && row.status != 413 {
				t.Fatalf("error %v answers %d, want 400 or 413", err, row.status)
			}
			return
		}
		lines := strings.Count(body, "\n") + strings.Count(body, "\r") + 1
		if len(b.rejectedLines) > maxRejectedLines || len(b.rejectedLines) > b.rejected {
			t.Fatalf("rejected %d, listed %v", b.rejected, b.rejectedLines)
		}
		for _, l := range b.rejectedLines {
			if l < 2 || l > lines {
				t.Fatalf("rejected line %d of a file of %d lines", l, lines)
			}
		}
		seen := map[string]bool{}
		for _, c := range b.codes {
			if len(c.Hash) != 64 || seen[c.Hash] || c.Lane != "invited" || c.Uses < 1 {
				t.Fatalf("kept %+v", c)
			}
			seen[c.Hash] = true
		}
	})
}

// FuzzAccessCodeBody: whatever an enter body holds, reading its access
// code never panics and fails only as a 400, or a 415 for a body of
// another type that may hold a code; a code read from JSON is the string
// the JSON held.
func FuzzAccessCodeBody(f *testing.F) {
	for _, s := range []struct{ body, ctype string }{
		{`{"accessCode":"` + accesscode.New() + `"}`, "application/json"}, {`{"accessCode":7}`, "application/json"},
		{"accessCode=ABCD-EFGH", "application/x-www-form-urlencoded"}, {"accessCode=%zz", "application/x-www-form-urlencoded"},
		{`{}`, ""}, {"{", "application/json; charset=utf-8"}, {"x", "text/plain"}, {"", "application/json"},
	} {
		f.Add(s.body, s.ctype)
	}
	f.Fuzz(func(t *testing.T, body, ctype string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", ctype)
		code, err := accessCodeOf(r)
		if err != nil && !errors.Is(err, errBadRequest) && !errors.Is(err, errCodeUnreadable) {
			t.Fatalf("error %v, want a 400 or a 415", err)
		}
		if err == nil && code != "" && !strings.Contains(body, code) && !strings.Contains(body, "\\") && !strings.Contains(body, "%") && !strings.Contains(body, "+") {
			t.Fatalf("read %q from %q", code, body)
		}
	})
}
