package httpapi

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAccessCodeOf: where an enter body's access code is read, and that a
// body which may hold one is never silently dropped: JSON with or without
// its content type (leading white space too) or under another type, the
// form field in any case; a body read no other way that names or is a code
// is 415; an unrelated or empty body is ignored as before.
func TestAccessCodeOf(t *testing.T) {
	t.Parallel()
	const code = "7K3M-Q9PX-2HWD-ZN4T"
	for _, c := range []struct {
		name, contentType, body string
		want                    string
		err                     error
	}{
		{"no body", "", "", "", nil},
		{"white space only", "application/json", " \n", "", nil},
		{"JSON", "application/json", `{"accessCode":"` + code + `"}`, code, nil},
		{"JSON without a type", "", `{"accessCode":"` + code + `"}`, code, nil},
		{"JSON without a type, after white space", "", "\n\t {\"accessCode\":\"" + code + "\"}", code, nil},
		{"JSON as text/plain", "text/plain; charset=utf-8", ` {"accessCode":"` + code + `"}`, code, nil},
		{"JSON as text/plain, accessCode a number", "text/plain", `{"accessCode":5}`, "", errBadRequest},
		{"JSON not an object", "application/json", `["` + code + `"]`, "", errBadRequest},
		{"the form", "application/x-www-form-urlencoded", "accessCode=" + code, code, nil},
		{"the form, another case", "application/x-www-form-urlencoded", "ACCESSCODE=" + code, code, nil},
		{"the form without a code", "application/x-www-form-urlencoded", "lang=en", "", nil},
		{"a form as text/plain", "text/plain", "accessCode=" + code, "", errCodeUnreadable},
		{"a form without a type", "", "access_code=" + code, "", errCodeUnreadable},
		{"a code alone as text/plain", "text/plain", code + "\n", "", errCodeUnreadable},
		{"multipart naming the code", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"accessCode\"\r\n\r\n" + code + "\r\n--x--\r\n", "", errCodeUnreadable},
		{"unrelated text", "text/plain", "hello", "", nil},
		{"an unrelated JSON array without a type", "", "[1, 2]", "", nil},
		{"unrelated broken braces as text/plain", "text/plain", "{not json", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/api/v1/queues/q/entries", strings.NewReader(c.body))
			if c.contentType != "" {
				r.Header.Set("Content-Type", c.contentType)
			}
			got, err := accessCodeOf(r)
			if got != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Errorf("accessCodeOf = %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}
