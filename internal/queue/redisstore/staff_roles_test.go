package redisstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/staff/stafftest"
)

// TestTokens runs the named tokens' suite on Redis, and checks that the
// keys are the staff's, under {:staff}, with no token in clear.
func TestTokens(t *testing.T) {
	stafftest.RunTokens(t, func(t *testing.T) (staff.TokenStore, stafftest.Restarter) {
		rdb, prefix := mustOpenRedis(t)
		return redisstore.New(rdb, prefix), nil
	})
	rdb, prefix := mustOpenRedis(t)
	s := redisstore.New(rdb, prefix)
	secret := staff.NewToken()
	if err := s.PutToken(context.Background(), staff.Token{Name: "ops", Role: staff.Operator, Hash: staff.HashToken(secret)}); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix+"{:staff}:") {
			t.Errorf("a token's key %q is outside the staff's section", k)
		}
		dump, _ := rdb.HGetAll(context.Background(), k).Result()
		for f, v := range dump {
			if strings.Contains(f+v, secret) {
				t.Errorf("%s holds the token in clear", k)
			}
		}
	}
	if len(keys) != 2 {
		t.Errorf("keys %v, want the names and the records", keys)
	}
}
