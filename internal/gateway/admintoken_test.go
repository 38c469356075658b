package gateway

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/staff"
)

// carriesToken finds the admin token in every form a backend may take it
// from, and nowhere it is only part of another value.
func TestCarriesToken(t *testing.T) {
	t.Parallel()
	const tok = "admin-0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		name, value string
		want        bool
	}{
		{"bearer", "Bearer " + tok, true},
		{"bearer in another case, spaces around", "  bearer   " + tok + " ", true},
		{"another scheme", "Token " + tok, true},
		{"alone", tok, true},
		{"quoted", `"` + tok + `"`, true},
		{"a cookie", "shop_cart=3; admin=" + tok + "; theme=dark", true},
		{"the first cookie", "admin=" + tok, true},
		{"a parameter", `Bearer realm="x", token="` + tok + `"`, true},
		{"one of a list", "a, " + tok + ", b", true},
		{"more after it, as a cookie's value", "a=" + tok + "==", false},
		{"a prefix of it", "Bearer " + tok[:len(tok)-1], false},
		{"longer", "Bearer " + tok + "x", false},
		{"inside another word", "x" + tok, false},
		{"inside a path", "/carts/" + tok + "/items", false},
		{"empty", "", false},
		{"short", "Bearer x", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := carriesToken(tt.value, []byte(tok)); got != tt.want {
				t.Errorf("carriesToken(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
	// A token with "=" in it (base64) is found whole, and as a cookie's value.
	padded := "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXM="
	for _, v := range []string{"Bearer " + padded, "admin=" + padded, padded} {
		if !carriesToken(v, []byte(padded)) {
			t.Errorf("carriesToken(%q) with a padded token = false", v)
		}
	}
}

// The check runs on every header of every request outside the prefix: a
// value that does not hold the token costs no allocation.
func TestCarriesTokenAllocatesNothing(t *testing.T) {
	tok := []byte("admin-0123456789abcdef0123456789abcdef")
	values := []string{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)",
		"shop_cart=3; wr_session=" + strings.Repeat("s", 80) + "; theme=dark", "text/html,application/xhtml+xml", "gzip, deflate, br"}
	if n := testing.AllocsPerRun(100, func() {
		for _, v := range values {
			carriesToken(v, tok)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run, want none", n)
	}
}

func FuzzCarriesToken(f *testing.F) {
	const tok = "admin-0123456789abcdef0123456789abcdef"
	for _, s := range []string{"Bearer " + tok, "a=" + tok + "; b=c", `"` + tok + `"`, "", "Bearer x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := carriesToken(v, []byte(tok))
		if got && !strings.Contains(v, tok) {
			t.Fatalf("carriesToken(%q): found a token the value does not hold", v)
		}
	})
}

// carriesNamedToken finds a named token (issue 56) wherever carriesToken
// looks, whatever its value, and nothing else of the right length.
func TestCarriesNamedToken(t *testing.T) {
	tok := staff.NewToken()
	for _, v := range []string{"Bearer " + tok, "x-api-key=" + tok, `token="` + tok + `"`, tok, "a, " + tok} {
		if !carriesNamedToken(v) {
			t.Errorf("carriesNamedToken(%q) = false", v)
		}
	}
	for _, v := range []string{"Bearer " + tok[:len(tok)-1], "x" + tok, "/carts/" + tok + "/items", "Bearer ab_" + tok[3:], ""} {
		if carriesNamedToken(v) {
			t.Errorf("carriesNamedToken(%q) = true", v)
		}
	}
	values := []string{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)",
		"shop_cart=3; wr_session=" + strings.Repeat("s", 80) + "; theme=dark", "gzip, deflate, br"}
	if n := testing.AllocsPerRun(100, func() {
		for _, v := range values {
			carriesNamedToken(v)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run, want none", n)
	}
}
