package front

import (
	"errors"
	"testing"
)

// TestAnotherLabelIsRefused: a MAC under any label but a person's or a
// shadow place's is no ticket, so a forger cannot make a shadow ticket
// pass for a person's by changing what the MAC says of it.
func TestAnotherLabelIsRefused(t *testing.T) {
	tk := NewTickets([]byte("a shared secret of enough length"))
	for _, label := range []string{"waitroom ghost ticket\x00", "waitroom ticket", "", "waitroom shadow ticket"} {
		forged := ticketPrefix + "1700.42." + tk.mac(label, "default", "alice", "1700", "42")
		if _, _, _, err := tk.Verify("default", "alice", forged); !errors.Is(err, ErrTicketInvalid) {
			t.Errorf("a MAC labelled %q: %v, want ErrTicketInvalid", label, err)
		}
	}
}
