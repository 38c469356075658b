package memstore

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// The admin page's signed-in sessions (issue 56, staff.SessionStore), the
// in-process twin of Redis's {:staff}:session:<hash> keys: kept beside the
// FirstUse markers, under usedMu and numbered with their steps, as they
// belong to no queue; a snapshot keeps the live ones (usedImage.Sessions).

var _ staff.SessionStore = (*Store)(nil)

// PutSession implements staff.SessionStore.
func (s *Store) PutSession(_ context.Context, ss staff.Session) error {
	if err := s.writable(); err != nil {
		return err
	}
	blob, err := json.Marshal(ss)
	if err != nil {
		return err
	}
	s.usedMu.Lock()
	now := s.now()
	s.usedOps++
	n := s.record(&op{kind: opPutSession, blob: blob}, s.usedOps, now)
	s.putSession(ss, now)
	s.usedMu.Unlock()
	return s.await(n)
}

// putSession keeps ss and drops the expired sessions, under usedMu: they
// lapse by themselves on Redis, and here each new one sweeps (sign-ins
// are few).
func (s *Store) putSession(ss staff.Session, now time.Time) {
	if s.sessions == nil {
		s.sessions = map[string]staff.Session{}
	}
	maps.DeleteFunc(s.sessions, func(_ string, v staff.Session) bool { return !now.Before(v.Expires) })
	if now.Before(ss.Expires) {
		s.sessions[ss.Hash] = ss
	}
}

// Session implements staff.SessionStore.
func (s *Store) Session(_ context.Context, hash string) (staff.Session, bool, error) {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	ss, ok := s.sessions[hash]
	if !ok || !s.now().Before(ss.Expires) {
		return staff.Session{}, false, nil
	}
	return ss, true, nil
}

// DeleteSession implements staff.SessionStore.
func (s *Store) DeleteSession(_ context.Context, hash string) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.usedMu.Lock()
	if _, ok := s.sessions[hash]; !ok {
		s.usedMu.Unlock()
		return nil
	}
	s.usedOps++
	n := s.record(&op{kind: opDeleteSession, token: hash}, s.usedOps, s.now())
	delete(s.sessions, hash)
	s.usedMu.Unlock()
	return s.await(n)
}

// replaySession runs a session's step again (replay).
func (s *Store) replaySession(o op) error {
	if o.kind == opDeleteSession {
		return s.DeleteSession(context.Background(), o.token)
	}
	var ss staff.Session
	if err := json.Unmarshal(o.blob, &ss); err != nil {
		return errBadRecord
	}
	return s.PutSession(context.Background(), ss)
}

// sessionImages are the live sessions for a snapshot, under usedMu, in
// the order of their hashes (a snapshot of the same state is the same).
func (s *Store) sessionImages() []staff.Session {
	now := s.now()
	var out []staff.Session
	for _, h := range slices.Sorted(maps.Keys(s.sessions)) {
		if ss := s.sessions[h]; now.Before(ss.Expires) {
			out = append(out, ss)
		}
	}
	return out
}

// restoreSessions puts a snapshot's sessions back (none in one from before
// issue 56).
func (s *Store) restoreSessions(imgs []staff.Session) {
	s.sessions = map[string]staff.Session{}
	for _, ss := range imgs {
		s.sessions[ss.Hash] = ss
	}
}
