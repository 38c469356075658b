package memstore

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/queue/rollup"
)

// The per-minute rows (queue.Store.Roll), Redis's roll.lua's twin: kept
// beside the FirstUse markers, under usedMu and with their count of
// journaled steps, because like them they belong to no queue's state and
// outlive a deleted queue until their time is up.

// row is one queue's minute: its fields, and when it lapses.
type row struct {
	fields map[string]string
	until  time.Time
}

// rowImage is a row as a snapshot keeps it (in usedImage).
type rowImage struct {
	Queue  string
	Minute int64 // its start, unix ms
	Fields map[string]string
	Until  time.Time
}

// Roll implements queue.Store.
func (s *Store) Roll(_ context.Context, name string, w rollup.Write) error {
	if err := s.writable(); err != nil {
		return err
	}
	blob, err := json.Marshal(w)
	if err != nil {
		return err
	}
	s.usedMu.Lock()
	now := s.now().Truncate(time.Millisecond)
	s.usedOps++
	n := s.record(&op{kind: opRoll, queue: name, blob: blob}, s.usedOps, now)
	s.roll(name, w, now)
	s.usedMu.Unlock()
	return s.await(n)
}

// roll applies w to the row of now's minute, under usedMu.
func (s *Store) roll(name string, w rollup.Write, now time.Time) {
	if s.rows == nil {
		s.rows = map[string]map[int64]*row{}
	}
	if s.rows[name] == nil {
		s.rows[name] = map[int64]*row{}
	}
	minute := now.Truncate(time.Minute).UnixMilli()
	r := s.rows[name][minute]
	if r == nil || !now.Before(r.until) {
		r = &row{fields: map[string]string{}}
		s.rows[name][minute] = r
	}
	r.until = now.Add(max(w.Keep, time.Millisecond))
	num := func(k string) (int64, bool) {
		n, err := strconv.ParseInt(r.fields[k], 10, 64)
		return n, err == nil
	}
	for k, v := range w.Add {
		n, _ := num(k)
		r.fields[k] = strconv.FormatInt(n+v, 10)
	}
	for k, v := range w.Max {
		if n, ok := num(k); !ok || n < v {
			r.fields[k] = strconv.FormatInt(v, 10)
		}
	}
	for k, v := range w.Min {
		if n, ok := num(k); !ok || n > v {
			r.fields[k] = strconv.FormatInt(v, 10)
		}
	}
	for k, v := range w.Set {
		r.fields[k] = v
	}
	// Rows lapse by themselves on Redis; here the lapsed are dropped
	// once a minute, and no read ever sees one.
	if now.Sub(s.rowsSwept) >= time.Minute {
		s.rowsSwept = now
		for q, rows := range s.rows {
			for m, r := range rows {
				if !now.Before(r.until) {
					delete(rows, m)
				}
			}
			if len(rows) == 0 {
				delete(s.rows, q)
			}
		}
	}
}

// Rollups implements queue.Store.
func (s *Store) Rollups(_ context.Context, name string, since, until time.Time) ([]rollup.Row, error) {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	now := s.now()
	from := since.Truncate(time.Minute).UnixMilli()
	var out []rollup.Row
	for m, r := range s.rows[name] {
		if m >= from && m <= until.UnixMilli() && now.Before(r.until) {
			out = append(out, rollup.Row{Minute: time.UnixMilli(m).UTC(), Fields: cloneFields(r.fields)})
		}
	}
	slices.SortFunc(out, func(a, b rollup.Row) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}

func cloneFields(f map[string]string) map[string]string {
	c := make(map[string]string, len(f))
	for k, v := range f {
		c[k] = v
	}
	return c
}

// rowImages are the rows for a snapshot, under usedMu.
func (s *Store) rowImages() []rowImage {
	var out []rowImage
	for q, rows := range s.rows {
		for m, r := range rows {
			out = append(out, rowImage{Queue: q, Minute: m, Fields: cloneFields(r.fields), Until: r.until})
		}
	}
	return out
}

// restoreRows puts a snapshot's rows back.
func (s *Store) restoreRows(imgs []rowImage) {
	s.rows = map[string]map[int64]*row{}
	for _, r := range imgs {
		if s.rows[r.Queue] == nil {
			s.rows[r.Queue] = map[int64]*row{}
		}
		s.rows[r.Queue][r.Minute] = &row{fields: r.Fields, until: r.Until}
	}
}
