package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// The named tokens (issue 56; staff.TokenStore), Redis's {:staff}:tokens
// twin: kept beside the FirstUse markers, under usedMu and numbered with
// their steps, as they belong to no queue. A snapshot keeps them
// (usedImage.Tokens; none in one from before).

var _ staff.TokenStore = (*Store)(nil)

// PutToken implements staff.TokenStore.
func (s *Store) PutToken(_ context.Context, t staff.Token) error {
	if err := s.writable(); err != nil {
		return err
	}
	blob, err := json.Marshal(t)
	if err != nil {
		return err
	}
	s.usedMu.Lock()
	if s.tokenNamed(t.Name) >= 0 {
		s.usedMu.Unlock()
		return staff.ErrTokenExists
	}
	s.usedOps++
	n := s.record(&op{kind: opPutToken, blob: blob}, s.usedOps, s.now())
	s.tokens = append(s.tokens, t)
	s.usedMu.Unlock()
	return s.await(n)
}

// tokenNamed is the index of the token named name in s.tokens (-1: none),
// under usedMu. A handful of tokens are kept: a scan is cheaper than a
// second index to keep right.
func (s *Store) tokenNamed(name string) int {
	return slices.IndexFunc(s.tokens, func(t staff.Token) bool { return t.Name == name })
}

// TokenByHash implements staff.TokenStore.
func (s *Store) TokenByHash(_ context.Context, hash string) (staff.Token, bool, error) {
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	i := slices.IndexFunc(s.tokens, func(t staff.Token) bool { return t.Hash == hash })
	if i < 0 {
		return staff.Token{}, false, nil
	}
	return s.tokens[i], true, nil
}

// Tokens implements staff.TokenStore.
func (s *Store) Tokens(context.Context) ([]staff.Token, error) {
	s.usedMu.Lock()
	out := slices.Clone(s.tokens)
	s.usedMu.Unlock()
	slices.SortFunc(out, func(a, b staff.Token) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteToken implements staff.TokenStore.
func (s *Store) DeleteToken(_ context.Context, name string) (bool, error) {
	if err := s.writable(); err != nil {
		return false, err
	}
	s.usedMu.Lock()
	i := s.tokenNamed(name)
	if i < 0 {
		s.usedMu.Unlock()
		return false, nil
	}
	s.usedOps++
	n := s.record(&op{kind: opDeleteToken, token: name}, s.usedOps, s.now())
	s.tokens = slices.Delete(s.tokens, i, i+1)
	s.usedMu.Unlock()
	return true, s.await(n)
}

// TouchToken implements staff.TokenStore.
func (s *Store) TouchToken(_ context.Context, hash string, at time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	s.usedMu.Lock()
	i := slices.IndexFunc(s.tokens, func(t staff.Token) bool { return t.Hash == hash })
	if i < 0 || !at.After(s.tokens[i].LastUsed) {
		s.usedMu.Unlock()
		return nil
	}
	s.usedOps++
	n := s.record(&op{kind: opTouchToken, token: hash, n: at.UnixNano()}, s.usedOps, s.now())
	s.tokens[i].LastUsed = at
	s.usedMu.Unlock()
	return s.await(n)
}

// replayUsed runs a step numbered with FirstUse's again: a token's here,
// a session's by replaySession (staff_sso.go), the others by replay.
func (s *Store) replayUsed(o op) error {
	switch o.kind {
	case opPutToken, opDeleteToken, opTouchToken:
		return s.replayToken(o)
	case opPutSession, opDeleteSession:
		return s.replaySession(o)
	}
	return s.replay(o)
}

// replayToken runs a token's step again. A name taken already is the
// step's own answer then, as at the time, not a fault.
func (s *Store) replayToken(o op) error {
	ctx := context.Background()
	switch o.kind {
	case opPutToken:
		var t staff.Token
		if err := json.Unmarshal(o.blob, &t); err != nil {
			return errBadRecord
		}
		if err := s.PutToken(ctx, t); !errors.Is(err, staff.ErrTokenExists) {
			return err
		}
		return nil
	case opDeleteToken:
		_, err := s.DeleteToken(ctx, o.token)
		return err
	default: // opTouchToken
		return s.TouchToken(ctx, o.token, time.Unix(0, o.n).UTC())
	}
}
