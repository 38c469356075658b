// Command persistcompare measures the ways the embedded line could be kept
// on disk (issue 26, DESIGN.md §6b), each the way the line would use it: one
// small record per change (an entry, ~60 bytes), 32 goroutines changing at
// once, for a fixed time, and reports changes per second:
//
//   - journal: internal/journal's append-only log (group write, fsync policy);
//   - bbolt: go.etcd.io/bbolt, one transaction per change (Update), and
//     with DB.Batch coalescing concurrent ones, fsync per commit or NoSync;
//   - sqlite: the orders' driver (modernc.org/sqlite), WAL, one INSERT
//     per change, synchronous=FULL and NORMAL.
//
// It is a module of its own so the waitroom module does not depend on
// bbolt. Run from here: go run . -for 3s
package main

import (
	"database/sql"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	_ "modernc.org/sqlite"

	"github.com/waitroom/waitroom/internal/journal"
)

func main() {
	d := flag.Duration("for", 3*time.Second, "how long each way runs")
	workers := flag.Int("workers", 32, "goroutines changing at once")
	flag.Parse()
	record := make([]byte, 60)
	for _, w := range ways() {
		dir, err := os.MkdirTemp("", "persistcompare-")
		if err != nil {
			panic(err)
		}
		write, closeFn, err := w.open(dir)
		if err != nil {
			panic(fmt.Errorf("%s: %w", w.name, err))
		}
		var n atomic.Int64
		var wg sync.WaitGroup
		stop := time.Now().Add(*d)
		start := time.Now()
		for g := range *workers {
			wg.Go(func() {
				buf := append([]byte(nil), record...)
				for i := uint64(0); time.Now().Before(stop); i++ {
					binary.LittleEndian.PutUint64(buf, uint64(g)<<40|i)
					if err := write(buf); err != nil {
						panic(fmt.Errorf("%s: %w", w.name, err))
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		closeFn()
		os.RemoveAll(dir)
		fmt.Printf("%-24s %10.0f changes/s\n", w.name, float64(n.Load())/took.Seconds())
	}
}

type way struct {
	name string
	open func(dir string) (write func([]byte) error, close func(), err error)
}

func ways() []way {
	var out []way
	for _, p := range []journal.Policy{journal.EverySec, journal.Always} {
		out = append(out, way{"journal " + string(p), func(dir string) (func([]byte) error, func(), error) {
			l, err := journal.OpenLog(dir, p)
			if err != nil {
				return nil, nil, err
			}
			return func(b []byte) error { return l.Wait(l.Append(b)) }, func() { l.Close() }, nil
		}})
	}
	for _, batch := range []bool{false, true} {
		for _, noSync := range []bool{false, true} {
			name := "bbolt Update"
			if batch {
				name = "bbolt Batch"
			}
			if noSync {
				name += " NoSync"
			}
			out = append(out, way{name, func(dir string) (func([]byte) error, func(), error) {
				db, err := bolt.Open(filepath.Join(dir, "line.db"), 0o600, &bolt.Options{NoSync: noSync})
				if err != nil {
					return nil, nil, err
				}
				tx := func(b []byte) func(*bolt.Tx) error {
					return func(tx *bolt.Tx) error {
						bk, err := tx.CreateBucketIfNotExists([]byte("line"))
						if err != nil {
							return err
						}
						return bk.Put(append([]byte(nil), b[:8]...), b)
					}
				}
				if batch {
					return func(b []byte) error { return db.Batch(tx(b)) }, func() { db.Close() }, nil
				}
				return func(b []byte) error { return db.Update(tx(b)) }, func() { db.Close() }, nil
			}})
		}
	}
	for _, sync := range []string{"FULL", "NORMAL"} {
		out = append(out, way{"sqlite WAL " + sync, func(dir string) (func([]byte) error, func(), error) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "line.db")+
				"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(10000)")
			if err != nil {
				return nil, nil, err
			}
			db.SetMaxOpenConns(1) // one writer, as the orders' store runs it
			if _, err := db.Exec("CREATE TABLE line (k INTEGER PRIMARY KEY, v BLOB)"); err != nil {
				return nil, nil, err
			}
			return func(b []byte) error {
				_, err := db.Exec("INSERT INTO line (k, v) VALUES (?, ?)", int64(binary.LittleEndian.Uint64(b)), b)
				return err
			}, func() { db.Close() }, nil
		}})
	}
	return out
}
