//go:build historybugs

package redisstore

import (
	"context"
	"strings"

	"github.com/waitroom/waitroom/internal/queue"
)

// AdmitWithoutGuard is Admit applying its plan with admit.lua's guards
// taken out: a deliberate bug for the fairness check to catch, only in a
// build with -tags historybugs (internal/app/historybugs.go).
func (s *Store) AdmitWithoutGuard(ctx context.Context, name string, tokens []string) (queue.Admission, error) {
	return s.admit(ctx, name, tokens, unguardedAdmit)
}

// unguardedAdmit is admit.lua applying a plan whatever happened since it
// was read: with neither the due time checked unchanged nor the users
// checked still holding the tickets read. admit.lua sent again by go-redis
// after its read timeout, or another instance's plan of the same tick,
// then hands the same users tokens again. It is the text Redis runs
// (scripts/generated/waitroom.lua), the guards taken out.
var unguardedAdmit = func() *script {
	// A library of its own (its name and functions' another hash), so the
	// functions of the one without the bug, on the same Redis, stay as they are.
	src := strings.ReplaceAll(lib.text, admitScript.fn[len("admit_"):], "bad"+admitScript.fn[len("admit_"):])
	for _, g := range [][2]string{
		{"if (redis.call('HGET', K.cfg, 'next') or '') ~= due then\n  return {TICK_GONE}\nend\n", ""},
		{"if math.floor((tonumber(held[j]) or -1) % BAND) == ticket and", "if (held[j] or true) and"},
		// A user no longer in line has no score: popped as the ticket read.
		{"pop(user, tonumber(held[j]), key)", "pop(user, tonumber(held[j]) or ticket, key)"},
	} {
		if !strings.Contains(src, g[0]) {
			panic("historybugs: admit.lua's guard is not where it was: update the deliberate bug: " + g[0])
		}
		src = strings.Replace(src, g[0], g[1], 1)
	}
	return (&library{text: src}).script("admit")
}()
