package stafftest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// Restarter, when a store can be restarted from what it keeps (the
// embedded line's snapshot and journal), answers the store as a restart
// finds it; nil for one that keeps nothing in process (Redis).
type Restarter func(t *testing.T) staff.TokenStore

// RunTokens is the suite every store passes for the named tokens: open
// makes an empty store, and restart (may be nil) the same store started
// again from what it kept.
func RunTokens(t *testing.T, open func(t *testing.T) (staff.TokenStore, Restarter)) {
	t.Run("PutReadListDelete", func(t *testing.T) { tokensKept(t, open) })
	t.Run("NameTakenOnce", func(t *testing.T) { nameTakenOnce(t, open) })
	t.Run("TouchOnlyLater", func(t *testing.T) { touchOnlyLater(t, open) })
	t.Run("SurviveRestart", func(t *testing.T) { survivesRestart(t, open) })
}

// token is a record of a fresh token named name.
func token(name string, role staff.Role) (string, staff.Token) {
	secret := staff.NewToken()
	at := time.UnixMilli(1_800_000_000_000 + rand.Int64N(1e6)).UTC()
	return secret, staff.Token{Name: name, Role: role, Hash: staff.HashToken(secret), Created: at, Expires: at.Add(time.Hour)}
}

func uniqueName(what string) string { return fmt.Sprintf("%s-%x", what, rand.Uint32()) }

func tokensKept(t *testing.T, open func(t *testing.T) (staff.TokenStore, Restarter)) {
	ctx := context.Background()
	s, _ := open(t)
	_, a := token(uniqueName("a"), staff.Viewer)
	_, b := token(uniqueName("b"), staff.Admin)
	b.Expires = time.Time{} // never
	for _, tok := range []staff.Token{b, a} {
		if err := s.PutToken(ctx, tok); err != nil {
			t.Fatalf("PutToken %s: %v", tok.Name, err)
		}
	}
	for _, want := range []staff.Token{a, b} {
		got, ok, err := s.TokenByHash(ctx, want.Hash)
		if err != nil || !ok || !sameToken(got, want) {
			t.Fatalf("TokenByHash(%s) = %+v %v %v, want %+v", want.Name, got, ok, err, want)
		}
	}
	if _, ok, err := s.TokenByHash(ctx, staff.HashToken(staff.NewToken())); ok || err != nil {
		t.Fatalf("an unknown hash: %v %v", ok, err)
	}
	list, err := s.Tokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != a.Name || list[1].Name != b.Name {
		t.Fatalf("Tokens = %+v %v, want a then b", list, err)
	}
	if ok, err := s.DeleteToken(ctx, a.Name); !ok || err != nil {
		t.Fatalf("DeleteToken(a) = %v %v", ok, err)
	}
	if ok, err := s.DeleteToken(ctx, a.Name); ok || err != nil {
		t.Fatalf("DeleteToken(a) again = %v %v, want false", ok, err)
	}
	if _, ok, _ := s.TokenByHash(ctx, a.Hash); ok {
		t.Fatal("a revoked token is still found by its hash")
	}
	if list, _ := s.Tokens(ctx); len(list) != 1 || list[0].Name != b.Name {
		t.Fatalf("after the revoke: %+v", list)
	}
}

func nameTakenOnce(t *testing.T, open func(t *testing.T) (staff.TokenStore, Restarter)) {
	ctx := context.Background()
	s, _ := open(t)
	name := uniqueName("ops")
	_, first := token(name, staff.Operator)
	_, second := token(name, staff.Admin)
	if err := s.PutToken(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.PutToken(ctx, second); !errors.Is(err, staff.ErrTokenExists) {
		t.Fatalf("a second token of one name: %v, want ErrTokenExists", err)
	}
	if _, ok, _ := s.TokenByHash(ctx, second.Hash); ok {
		t.Fatal("the refused token was kept")
	}
	if got, _, _ := s.TokenByHash(ctx, first.Hash); got.Role != staff.Operator {
		t.Fatalf("the first token became %+v", got)
	}
}

func touchOnlyLater(t *testing.T, open func(t *testing.T) (staff.TokenStore, Restarter)) {
	ctx := context.Background()
	s, _ := open(t)
	_, tok := token(uniqueName("ci"), staff.Viewer)
	if err := s.PutToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	later, earlier := tok.Created.Add(time.Minute), tok.Created.Add(time.Second)
	for _, at := range []time.Time{later, earlier} {
		if err := s.TouchToken(ctx, tok.Hash, at); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, _ := s.TokenByHash(ctx, tok.Hash); !got.LastUsed.Equal(later) {
		t.Fatalf("LastUsed = %v, want %v (an earlier touch never goes back)", got.LastUsed, later)
	}
	if err := s.TouchToken(ctx, staff.HashToken(staff.NewToken()), later); err != nil {
		t.Fatalf("touching a token not kept: %v", err)
	}
	if ok, _ := s.DeleteToken(ctx, tok.Name); !ok {
		t.Fatal("not deleted")
	}
	if err := s.TouchToken(ctx, tok.Hash, later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.TokenByHash(ctx, tok.Hash); ok {
		t.Fatal("a touch brought a revoked token back")
	}
}

func survivesRestart(t *testing.T, open func(t *testing.T) (staff.TokenStore, Restarter)) {
	ctx := context.Background()
	s, restart := open(t)
	if restart == nil {
		return // nothing in process to lose
	}
	_, kept := token(uniqueName("kept"), staff.Operator)
	_, gone := token(uniqueName("gone"), staff.Admin)
	for _, tok := range []staff.Token{kept, gone} {
		if err := s.PutToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	used := kept.Created.Add(2 * time.Minute)
	if err := s.TouchToken(ctx, kept.Hash, used); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteToken(ctx, gone.Name); !ok || err != nil {
		t.Fatal(ok, err)
	}
	s = restart(t)
	got, ok, err := s.TokenByHash(ctx, kept.Hash)
	kept.LastUsed = used
	if err != nil || !ok || !sameToken(got, kept) {
		t.Fatalf("after a restart: %+v %v %v, want %+v", got, ok, err, kept)
	}
	if _, ok, _ := s.TokenByHash(ctx, gone.Hash); ok {
		t.Fatal("a revoked token came back after a restart")
	}
}

// sameToken compares two records, their times as instants.
func sameToken(a, b staff.Token) bool {
	return a.Name == b.Name && a.Role == b.Role && a.Hash == b.Hash && a.Created.Equal(b.Created) &&
		a.LastUsed.Equal(b.LastUsed) && a.Expires.Equal(b.Expires)
}
