package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

func TestSessions(t *testing.T) {
	stafftest.RunSessions(t, func(t *testing.T) (staff.SessionStore, stafftest.Clock) {
		rdb, prefix := mustOpenRedis(t)
		return redisstore.New(rdb, prefix), wallClock(rdb, prefix)
	})
}

// TestSessionKeys: a session lives under the staff's hash tag, named by
// the hash of its cookie's value, and lapses by itself with the session.
func TestSessionKeys(t *testing.T) {
	rdb, prefix := mustOpenRedis(t)
	s := redisstore.New(rdb, prefix)
	ctx := context.Background()
	ss := staff.Session{Hash: staff.HashToken("cookie"), Role: staff.Viewer, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	if err := s.PutSession(ctx, ss); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 || keys[0] != prefix+"{:staff}:session:"+ss.Hash {
		t.Fatalf("keys %v, %v", keys, err)
	}
	ttl := rdb.PTTL(ctx, keys[0]).Val()
	if ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("TTL %v, want the session's hour", ttl)
	}
	if v := rdb.Get(ctx, keys[0]).Val(); strings.Contains(v, `"cookie"`) {
		t.Errorf("the record holds the cookie's value: %s", v)
	}
}
