package queue

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkRememberedTicketBytes reports the heap one instance keeps per
// remembered user, at a million users, for the ids of the bench harness
// (12 bytes) and the page's session ids (37 bytes): the snapshots' tickets
// as they are, beside a map[string]int64 from the user id (how they were
// kept before) as the reference, in the same run.
//
//	go test -run '^$' -bench RememberedTicketBytes -benchtime 1x ./internal/queue/
func BenchmarkRememberedTicketBytes(b *testing.B) {
	const n = 1_000_000
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, ids := range []struct {
		name string
		id   func(int) string
	}{
		{"12-byte ids", func(i int) string { return fmt.Sprintf("user-%07d", i) }},
		{"37-byte ids", func(i int) string { return fmt.Sprintf("anon-%032d", i) }},
	} {
		b.Run("map[string]int64/"+ids.name, func(b *testing.B) {
			for range b.N {
				before := heap()
				m := map[string]int64{}
				for i := range n {
					m[ids.id(i)] = int64(i + 1)
				}
				after := heap()
				runtime.KeepAlive(m)
				b.ReportMetric((float64(after)-float64(before))/n, "B/user")
			}
		})
		b.Run("snapshots/"+ids.name, func(b *testing.B) {
			for range b.N {
				s := newSnapshots(&lineStore{}, time.Hour)
				s.remember("q", ids.id(0), Standing{State: Waiting, Ticket: 1})
				before := heap()
				for i := 1; i < n; i++ {
					s.remember("q", ids.id(i), Standing{State: Waiting, Ticket: int64(i + 1)})
				}
				after := heap()
				runtime.KeepAlive(s)
				b.ReportMetric((float64(after)-float64(before))/(n-1), "B/user")
			}
		})
	}
}
