package handoff

import (
	"errors"
	"strings"
	"testing"
)

func TestCodesHashAndRefuseWhatNewCannotMake(t *testing.T) {
	a, b := New(), New()
	if a == b || len(a) != 32 {
		t.Fatalf("codes %q and %q: want two different 32-symbol codes", a, b)
	}
	ha, err := Hash(a)
	if err != nil || len(ha) != 64 {
		t.Fatalf("Hash(%q) = %q, %v", a, ha, err)
	}
	if hb, _ := Hash(b); hb == ha {
		t.Fatal("two codes, one hash")
	}
	for _, bad := range []string{"", a[:31], a + "a", strings.ToUpper(a), a[:31] + "!", a[:31] + "1"} {
		if _, err := Hash(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Hash(%q): %v, want ErrMalformed", bad, err)
		}
	}
}

func FuzzHash(f *testing.F) {
	f.Add(New())
	f.Add("")
	f.Add(strings.Repeat("a", 32))
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Hash(s)
		if err == nil && len(h) != 64 {
			t.Fatalf("Hash(%q) = %q", s, h)
		}
	})
}
