package queue

import (
	"regexp"
	"strings"
	"testing"
)

// The rules of names, written a second way: printable ASCII without
// braces or space, 1–128 bytes for a user id; [A-Za-z0-9_.-], 1–64 bytes,
// not a dot segment, for a queue.
var (
	userIDRule    = regexp.MustCompile(`^[!-z|~]{1,128}$`)
	queueNameRule = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// FuzzValidateUserID: the validator accepts exactly what the rule says
// (user ids reach Redis keys and hash tags).
func FuzzValidateUserID(f *testing.F) {
	for _, s := range []string{"alice", "", "a{b}", "{q}", "a b", "a\x00b", "jürgen", "\x7f", "~", "|",
		strings.Repeat("u", 128), strings.Repeat("u", 129), "anon-0123456789abcdef0123456789abcdef"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateUserID(s)
		if want := userIDRule.MatchString(s); (err == nil) != want {
			t.Fatalf("ValidateUserID(%q) = %v, the rule says valid=%v", s, err, want)
		}
	})
}

// FuzzValidateQueueName: likewise for queue names (URL path segments and
// Redis hash tags).
func FuzzValidateQueueName(f *testing.F) {
	for _, s := range []string{"default", "", ".", "..", "...", "a.b", "spring-drop_2", "a/b", "a b", "{q}", "é",
		strings.Repeat("q", 64), strings.Repeat("q", 65), "%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateQueueName(s)
		want := queueNameRule.MatchString(s) && s != "." && s != ".."
		if (err == nil) != want {
			t.Fatalf("ValidateQueueName(%q) = %v, the rule says valid=%v", s, err, want)
		}
	})
}
