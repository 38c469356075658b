package degraded_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/degraded"
)

type outage map[string]bool

func (o outage) Open(q string) bool { return o[q] }

func TestAcceptOnlyUnderAdmitWithTheStoreAway(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }
	secret := []byte("a secret of at least thirty-two bytes")
	down := outage{"sale": true}
	admit := degraded.New(degraded.Admit, down, secret, time.Minute, clock)
	token, exp := admit.Issue("sale", "ann")
	if !strings.HasPrefix(token, "wrd1.") || len(token) > 256 {
		t.Fatalf("token %q", token)
	}
	if exp.Sub(now) < time.Minute || exp.Sub(now) >= 2*time.Minute {
		t.Errorf("expires %v after issue, want within [ttl, 2 ttl)", exp.Sub(now))
	}
	if again, _ := admit.Issue("sale", "ann"); again != token {
		t.Errorf("a second issue within the TTL differs: %q, %q (one order per user per TTL rests on it)", again, token)
	}
	wait := degraded.New(degraded.Wait, down, secret, time.Minute, clock)
	other := degraded.New(degraded.Admit, down, []byte("another secret of thirty-two bytes!!"), time.Minute, clock)
	for _, tt := range []struct {
		name               string
		p                  *degraded.Policy
		queue, user, token string
		want               bool
	}{
		{"admit, store away, own token", admit, "sale", "ann", token, true},
		{"wait", wait, "sale", "ann", token, false},
		{"nil policy (wait)", nil, "sale", "ann", token, false},
		{"another user", admit, "sale", "bob", token, false},
		{"another queue whose store answers", admit, "other", "ann", token, false},
		{"another secret", other, "sale", "ann", token, false},
		{"an ordinary token", admit, "sale", "ann", "AbCdEf0123456789AbCdEf", false},
		{"tampered expiry", admit, "sale", "ann", strings.Replace(token, "wrd1.1", "wrd1.2", 1), false},
		{"no mac", admit, "sale", "ann", "wrd1.99999999999", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Accept(tt.queue, tt.user, tt.token); got != tt.want {
				t.Errorf("Accept = %v, want %v", got, tt.want)
			}
		})
	}
	now = exp
	if admit.Accept("sale", "ann", token) {
		t.Error("an expired degraded token accepted")
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"wait", "admit"} {
		if m, err := degraded.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := degraded.ParseMode("open"); err == nil {
		t.Error("ParseMode(open) accepted")
	}
}

func FuzzValid(f *testing.F) {
	p := degraded.New(degraded.Admit, outage{"q": true}, []byte("fuzz secret of thirty-two bytes!!"), time.Minute, nil)
	tok, _ := p.Issue("q", "u")
	for _, s := range []string{tok, "wrd1.", "wrd1..", "wrd1.-1.x", "wrd1.99999999999999999999.x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != tok && p.Valid("q", "u", s) {
			t.Fatalf("Valid(%q) for a string never issued", s)
		}
	})
}
