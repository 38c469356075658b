package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/staff"
)

// The named tokens (issue 56; staff.TokenStore), in the staff's section:
// keys under the hash tag {:staff} (a colon is never in a queue's name,
// so it is no queue's tag and one Cluster slot holds them all). A token is
// found by its hash in one HGET; its name holds the hash, so a name is
// taken once; its last use is apart from its record, so a touch rewrites
// one number.

var (
	putTokenScript    = mustScript("put_token")
	deleteTokenScript = mustScript("delete_token")
	touchTokenScript  = mustScript("touch_token")
	tokensScript      = mustScript("tokens")
)

var _ staff.TokenStore = (*Store)(nil)

// staffKey is one of the staff's keys.
func staffKey(prefix, name string) string { return prefix + "{:staff}:" + name }

// tokenKeys are the keys the token scripts get, in their order: names,
// records, last uses.
func (s *Store) tokenKeys() []string {
	return []string{staffKey(s.prefix, "tokens"), staffKey(s.prefix, "tokenhash"), staffKey(s.prefix, "tokenused")}
}

// callStaff runs one of the staff's scripts on its keys.
func (s *Store) callStaff(ctx context.Context, sc *script, args ...any) *redis.Cmd {
	cmd := sc.call(ctx, s.rdb, s.tokenKeys(), args)
	if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		cmd.SetErr(unavailable(fmt.Errorf("scripts/generated/waitroom.lua (%s.lua): %w", sc.name, err)))
	}
	return cmd
}

// PutToken implements staff.TokenStore.
func (s *Store) PutToken(ctx context.Context, t staff.Token) error {
	t.LastUsed = time.Time{} // kept apart (touch_token.lua)
	record, err := json.Marshal(t)
	if err != nil {
		return err
	}
	kept, err := s.callStaff(ctx, putTokenScript, t.Name, t.Hash, record).Int64()
	if err != nil {
		return err
	}
	if kept == 0 {
		return staff.ErrTokenExists
	}
	return nil
}

// TokenByHash implements staff.TokenStore.
func (s *Store) TokenByHash(ctx context.Context, hash string) (staff.Token, bool, error) {
	if hash == "" {
		return staff.Token{}, false, nil // '' asks tokens.lua for all
	}
	list, err := s.readTokens(ctx, hash)
	if err != nil || len(list) == 0 {
		return staff.Token{}, false, err
	}
	return list[0], true, nil
}

// Tokens implements staff.TokenStore.
func (s *Store) Tokens(ctx context.Context) ([]staff.Token, error) {
	list, err := s.readTokens(ctx, "")
	slices.SortFunc(list, func(a, b staff.Token) int { return strings.Compare(a.Name, b.Name) })
	return list, err
}

// readTokens reads the token of hash, or all ("").
func (s *Store) readTokens(ctx context.Context, hash string) ([]staff.Token, error) {
	reply, err := s.callStaff(ctx, tokensScript, hash).StringSlice()
	if err != nil {
		return nil, err
	}
	var out []staff.Token
	for i := 0; i+1 < len(reply); i += 2 {
		var t staff.Token
		if err := json.Unmarshal([]byte(reply[i]), &t); err != nil {
			return nil, fmt.Errorf("redis data damaged: a token's record: %w", err)
		}
		if ms, err := strconv.ParseInt(reply[i+1], 10, 64); err == nil {
			t.LastUsed = time.UnixMilli(ms).UTC()
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteToken implements staff.TokenStore.
func (s *Store) DeleteToken(ctx context.Context, name string) (bool, error) {
	n, err := s.callStaff(ctx, deleteTokenScript, name).Int64()
	return n == 1, err
}

// TouchToken implements staff.TokenStore.
func (s *Store) TouchToken(ctx context.Context, hash string, at time.Time) error {
	return s.callStaff(ctx, touchTokenScript, hash, at.UnixMilli()).Err()
}
