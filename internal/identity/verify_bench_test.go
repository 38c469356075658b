package identity

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkVerifyJWT: a user JWT seen for the first time (verified), and
// seen again (the cache), as enter and status see them.
//
//	go test -run '^$' -bench VerifyJWT -benchmem ./internal/identity/
func BenchmarkVerifyJWT(b *testing.B) {
	id := New([]byte("a-benchmark-secret-of-at-least-32-bytes"))
	tokens := make([]string, 1<<16)
	for i := range tokens {
		tokens[i] = id.SignJWT(fmt.Sprintf("bench-user-%d", i), time.Hour)
	}
	b.Run("first sight", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%len(tokens) == 0 {
				id.mu.Lock()
				clear(id.verified)
				clear(id.previous)
				id.mu.Unlock()
			}
			if _, err := id.userFromJWT(tokens[i%len(tokens)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("again", func(b *testing.B) {
		for _, tok := range tokens {
			if _, err := id.userFromJWT(tok); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := id.userFromJWT(tokens[i%len(tokens)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
