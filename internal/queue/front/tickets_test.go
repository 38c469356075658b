package front_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/queue/front"
)

func TestASignedTicketReadsBack(t *testing.T) {
	tk := front.NewTickets([]byte("a shared secret of enough length"))
	signed := tk.Sign("default", "alice", 1700, 42)
	epoch, ticket, shadow, err := tk.Verify("default", "alice", signed)
	if err != nil || epoch != 1700 || ticket != 42 || shadow {
		t.Fatalf("Verify(Sign) = %d, %d, %v, %v", epoch, ticket, shadow, err)
	}
	if other := front.NewTickets([]byte("a shared secret of enough length")); other.Sign("default", "alice", 1700, 42) != signed {
		t.Error("another instance with the same secret signs otherwise")
	}
}

// TestAShadowTicketLooksAPersons: a shadow place's ticket (issue 51) has
// a person's shape, epoch and number; only its MAC, under a label the
// client cannot see, says it is a shadow place's, and Verify tells so.
func TestAShadowTicketLooksAPersons(t *testing.T) {
	tk := front.NewTickets([]byte("a shared secret of enough length"))
	person, shadow := tk.Sign("default", "alice", 1700, 42), tk.SignShadow("default", "alice", 1700, 42)
	if person == shadow || person[:strings.LastIndex(person, ".")] != shadow[:strings.LastIndex(shadow, ".")] || len(person) != len(shadow) {
		t.Fatalf("a person's %q, a shadow place's %q: want the same but for the MAC", person, shadow)
	}
	epoch, ticket, isShadow, err := tk.Verify("default", "alice", shadow)
	if err != nil || epoch != 1700 || ticket != 42 || !isShadow {
		t.Fatalf("Verify(SignShadow) = %d, %d, %v, %v", epoch, ticket, isShadow, err)
	}
	if _, _, _, err := tk.Verify("default", "bob", shadow); !errors.Is(err, front.ErrTicketInvalid) {
		t.Errorf("a shadow ticket shown by another user: %v", err)
	}
}

func TestATicketNotSignedHereIsRefused(t *testing.T) {
	tk := front.NewTickets([]byte("a shared secret of enough length"))
	signed := tk.Sign("default", "alice", 1700, 42)
	mac := signed[strings.LastIndex(signed, ".")+1:]
	for name, c := range map[string]struct{ queue, user, ticket string }{
		"the number altered":       {"default", "alice", strings.Replace(signed, ".42.", ".2.", 1)},
		"the epoch altered":        {"default", "alice", strings.Replace(signed, "t1.1700.", "t1.1701.", 1)},
		"someone else's":           {"default", "bob", signed},
		"another queue's":          {"other", "alice", signed},
		"forged without the key":   {"default", "alice", front.NewTickets([]byte("another secret entirely......")).Sign("default", "alice", 1700, 1)},
		"the number spelt another": {"default", "alice", "t1.1700.042." + mac},
		"a plus sign":              {"default", "alice", "t1.1700.+42." + mac},
		"no mac":                   {"default", "alice", "t1.1700.42."},
		"not a ticket":             {"default", "alice", "42"},
		"empty":                    {"default", "alice", ""},
		"a fifth part":             {"default", "alice", signed + ".x"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := tk.Verify(c.queue, c.user, c.ticket); !errors.Is(err, front.ErrTicketInvalid) {
				t.Errorf("Verify(%q) = %v, want ErrTicketInvalid", c.ticket, err)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	tk := front.NewTickets([]byte("a shared secret of enough length"))
	f.Add(tk.Sign("default", "alice", 1, 1))
	f.Add(tk.SignShadow("default", "alice", 1, 1))
	f.Add("t1.1.1.AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		epoch, ticket, shadow, err := tk.Verify("default", "alice", s)
		sign := tk.Sign
		if shadow {
			sign = tk.SignShadow
		}
		if err == nil && sign("default", "alice", epoch, ticket) != s {
			t.Errorf("accepted %q, which Sign never writes", s)
		}
	})
}
