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
	epoch, ticket, err := tk.Verify("default", "alice", signed)
	if err != nil || epoch != 1700 || ticket != 42 {
		t.Fatalf("Verify(Sign) = %d, %d, %v", epoch, ticket, err)
	}
	if other := front.NewTickets([]byte("a shared secret of enough length")); other.Sign("default", "alice", 1700, 42) != signed {
		t.Error("another instance with the same secret signs otherwise")
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
			if _, _, err := tk.Verify(c.queue, c.user, c.ticket); !errors.Is(err, front.ErrTicketInvalid) {
				t.Errorf("Verify(%q) = %v, want ErrTicketInvalid", c.ticket, err)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	tk := front.NewTickets([]byte("a shared secret of enough length"))
	f.Add(tk.Sign("default", "alice", 1, 1))
	f.Add("t1.1.1.AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		epoch, ticket, err := tk.Verify("default", "alice", s)
		if err == nil && tk.Sign("default", "alice", epoch, ticket) != s {
			t.Errorf("accepted %q, which Sign never writes", s)
		}
	})
}
