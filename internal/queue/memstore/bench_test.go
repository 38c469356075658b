package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/memstore"
)

// BenchmarkDurable calls Enter (each call a new user, on a paused queue)
// and Status (users who entered) on the store in memory only and on the
// store kept in a directory under each fsync policy, 16 × GOMAXPROCS
// callers each, as BenchmarkStores does: the ratio of each kept store to
// the one in memory is the cost of keeping the line (docs/benchmarks.md).
func BenchmarkDurable(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) *memstore.Store
	}{
		{"memory", func(*testing.B) *memstore.Store { return memstore.New(nil) }},
	}
	for _, p := range []journal.Policy{journal.EverySec, journal.Always, journal.No} {
		stores = append(stores, struct {
			name string
			open func(b *testing.B) *memstore.Store
		}{"fsync-" + string(p), func(b *testing.B) *memstore.Store {
			s, _, err := memstore.Open(b.TempDir(), memstore.Options{Fsync: p})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}})
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			s := st.open(b)
			c := queue.DefaultConfig()
			c.Paused, c.Capacity = true, 100_000_000 // the line only grows
			if err := s.PutConfig(ctx, "bench", c); err != nil {
				b.Fatal(err)
			}
			var users atomic.Int64
			run := func(b *testing.B, call func(user string) error) {
				b.SetParallelism(16)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(fmt.Sprintf("u%d", users.Add(1))); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			}
			b.Run("enter", func(b *testing.B) {
				run(b, func(u string) error { _, err := s.Enter(ctx, "bench", u); return err })
			})
			users.Store(0) // status asks about users who entered
			b.Run("status", func(b *testing.B) {
				run(b, func(u string) error { _, err := s.Status(ctx, "bench", u); return err })
			})
		})
	}
}

// BenchmarkDurableLoad fills a kept store with a line of 100k and of 1M
// users, closes it, and reports the directory's size and how long opening
// it again takes, from the journal as it was left and from a snapshot
// (Compact). One round each: run it with -benchtime 1x.
func BenchmarkDurableLoad(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			s, _, err := memstore.Open(dir, memstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			c := queue.DefaultConfig()
			c.Paused, c.Capacity = true, 100_000_000
			if err := s.PutConfig(ctx, "q", c); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if _, err := s.Enter(ctx, "q", fmt.Sprintf("user-%07d", i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			open := func(what string) {
				start := time.Now()
				s, rec, err := memstore.Open(dir, memstore.Options{})
				took := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if rec.Places != int64(n) {
					b.Fatalf("%d places recovered, want %d", rec.Places, n)
				}
				b.ReportMetric(float64(dirSize(b, dir))/1e6, what+"-MB")
				b.ReportMetric(took.Seconds(), what+"-open-s")
				if what == "journal" {
					if err := s.Compact(); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			open("journal")
			open("snapshot")
		})
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkDrawRecordBytes reports the heap the store keeps for an
// opening's record of 100,000 participants (SaveDraw; the record as its
// JSON), beside the same record as a draw.Record (strings) for reference,
// and the JSON's length, in one run:
//
//	go test -run '^$' -bench DrawRecordBytes -benchtime 1x ./internal/queue/memstore/
func BenchmarkDrawRecordBytes(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for range b.N {
		s := memstore.New(nil)
		c := queue.DefaultConfig()
		c.Capacity, c.OpensAt = 2*n, time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		if err := s.PutConfig(ctx, "q", c); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, err := s.Enter(ctx, "q", fmt.Sprintf("person-%06d", i)); err != nil {
				b.Fatal(err)
			}
		}
		o, err := s.OpenDue(ctx, "q", "me", time.Minute)
		if err != nil || !o.Due {
			b.Fatalf("OpenDue: %v", err)
		}
		d := admission.Drawer{Participants: draw.NewParticipants([]byte("k"))}
		committed, _, err := admission.Commit(ctx, s, "q", o.OpensAt, d)
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(o.Pending))
		for i, u := range o.Pending {
			ids[i] = d.Participants.Of("q", u).ID
		}
		r, err := draw.Draw(committed, ids, nil, o.First, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		js, _ := json.Marshal(r)
		before := heap()
		if _, err := s.SaveDraw(ctx, "q", "me", r); err != nil {
			b.Fatal(err)
		}
		kept := heap() - before
		var decoded draw.Record
		before = heap()
		if err := json.Unmarshal(js, &decoded); err != nil {
			b.Fatal(err)
		}
		asStruct := heap() - before
		runtime.KeepAlive(s) // and what was measured beside it, till now
		runtime.KeepAlive(&decoded)
		runtime.KeepAlive(&r)
		runtime.KeepAlive(ids)
		runtime.KeepAlive(js)
		b.ReportMetric(float64(kept)/(1<<20), "MiB-kept")
		b.ReportMetric(float64(asStruct)/(1<<20), "MiB-as-draw.Record")
		b.ReportMetric(float64(len(js))/(1<<20), "MiB-JSON")
	}
}
