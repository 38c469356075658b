package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/staff"
)

// The admin page's signed-in sessions (issue 56, staff.SessionStore): one
// string key each, the session's JSON under the hash of its cookie's
// value, in the staff's slot ({:staff}: a colon is in no queue's name),
// lapsing by itself when the session expires.

var _ staff.SessionStore = (*Store)(nil)

func staffSessionKey(prefix, hash string) string { return prefix + "{:staff}:session:" + hash }

// PutSession implements staff.SessionStore.
func (s *Store) PutSession(ctx context.Context, ss staff.Session) error {
	ttl := time.Until(ss.Expires)
	if ttl < time.Millisecond {
		return nil // expired already: nothing to keep
	}
	blob, err := json.Marshal(ss)
	if err != nil {
		return err
	}
	return unavailable(s.rdb.Set(ctx, staffSessionKey(s.prefix, ss.Hash), blob, ttl).Err())
}

// Session implements staff.SessionStore.
func (s *Store) Session(ctx context.Context, hash string) (staff.Session, bool, error) {
	raw, err := s.rdb.Get(ctx, staffSessionKey(s.prefix, hash)).Bytes()
	if errors.Is(err, redis.Nil) {
		return staff.Session{}, false, nil
	}
	if err != nil {
		return staff.Session{}, false, unavailable(err)
	}
	var ss staff.Session
	if err := json.Unmarshal(raw, &ss); err != nil {
		return staff.Session{}, false, errors.New("redis data damaged: a session's record: " + err.Error())
	}
	// The key's TTL is set from the session's expiry, but a clock between
	// Redis's and ours may differ: the expiry itself decides.
	if !time.Now().Before(ss.Expires) {
		return staff.Session{}, false, nil
	}
	return ss, true, nil
}

// DeleteSession implements staff.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	return unavailable(s.rdb.Del(ctx, staffSessionKey(s.prefix, hash)).Err())
}
