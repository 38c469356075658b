package staff

import (
	"context"
	"testing"
)

func TestRolesAllowUpward(t *testing.T) {
	for _, c := range []struct {
		held, need Role
		ok         bool
	}{
		{Viewer, Viewer, true}, {Viewer, Operator, false}, {Viewer, Admin, false},
		{Operator, Viewer, true}, {Operator, Operator, true}, {Operator, Admin, false},
		{Admin, Viewer, true}, {Admin, Operator, true}, {Admin, Admin, true},
		{"root", Viewer, false}, {"", Viewer, false}, {Admin, "", false}, {Admin, "owner", false},
	} {
		if got := c.held.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v, want %v", c.held, c.need, got, c.ok)
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range Roles {
		if got, err := ParseRole(string(r)); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	if _, err := ParseRole("Admin"); err == nil {
		t.Error("ParseRole(Admin) took a role's name in another case")
	}
}

func TestTokensHaveTheirShape(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || !LooksLikeToken(a) || !LooksLikeToken(b) || len(a) != 46 {
		t.Fatalf("tokens %q %q", a, b)
	}
	for _, s := range []string{"", "wr_", a[:45], a + "x", "xx" + a[2:], a[:10] + "+" + a[11:]} {
		if LooksLikeToken(s) {
			t.Errorf("LooksLikeToken(%q) = true", s)
		}
	}
	if HashToken(a) == HashToken(b) || len(HashToken(a)) != 64 {
		t.Error("hashes")
	}
}

func TestActorRidesTheContext(t *testing.T) {
	if _, ok := ActorOf(context.Background()); ok {
		t.Fatal("an actor in an empty context")
	}
	a := Actor{Kind: KindToken, Name: "ops", Role: Operator}
	got, ok := ActorOf(WithActor(context.Background(), a))
	if !ok || got != a || got.Label() != "token ops" {
		t.Fatalf("got %+v %v", got, ok)
	}
}
