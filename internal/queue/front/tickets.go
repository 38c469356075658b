package front

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// ErrTicketInvalid: a ticket this server did not sign for this user and
// queue (forged, altered, or someone else's). It places no one and lets no
// one in.
var ErrTicketInvalid = errors.New("ticket invalid: not signed by this server for this user and queue")

// Tickets signs the tickets users carry to the page, so that a page shows
// only a place the line gave it, and the server takes back only a ticket it
// signed: an HMAC-SHA256 over the queue, the user, the line's epoch and the
// ticket, with a key every instance shares. A signed ticket is
// "t1.<epoch>.<ticket>.<mac>": the page reads the two numbers, never the
// mac.
type Tickets struct {
	key []byte
	// macs are HMACs keyed with key, kept between signatures: a status
	// answer signs its ticket, and keying an HMAC anew was half its cost.
	macs sync.Pool
}

// ticketPrefix starts every signed ticket and names its form.
const ticketPrefix = "t1."

// macBytes is how much of the HMAC a ticket keeps: 128 bits, beyond any
// guessing, in 22 characters.
const macBytes = 16

// NewTickets returns the signer with a key derived from secret (the
// --auth-secret that signs session cookies, which every instance must
// share already), under its own label, so the same secret never signs a
// ticket the way it signs anything else.
func NewTickets(secret []byte) *Tickets {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom-ticket-key"))
	t := &Tickets{key: m.Sum(nil)}
	t.macs.New = func() any { return hmac.New(sha256.New, t.key) }
	return t
}

// Sign is the user's ticket in the queue, signed.
func (t *Tickets) Sign(queue, user string, epoch, ticket int64) string {
	return t.sign(personLabel, queue, user, epoch, ticket)
}

// SignShadow is a shadow place's ticket (issue 51) signed: the same shape,
// epoch and number range as a person's (the caller passes the real line's
// epoch and the ticket a person arriving with it would hold), so that
// nothing a client can read tells it from a person's; only the MAC, under
// another label, says it numbers no place in the real line (Verify).
func (t *Tickets) SignShadow(queue, user string, epoch, ticket int64) string {
	return t.sign(shadowLabel, queue, user, epoch, ticket)
}

// The labels a ticket's MAC starts with: a person's, a shadow place's.
const (
	personLabel = "waitroom ticket\x00"
	shadowLabel = "waitroom shadow ticket\x00"
)

func (t *Tickets) sign(label, queue, user string, epoch, ticket int64) string {
	e, n := strconv.FormatInt(epoch, 10), strconv.FormatInt(ticket, 10)
	return ticketPrefix + e + "." + n + "." + t.mac(label, queue, user, e, n)
}

// Verify reads a signed ticket back: its epoch and ticket, and whether it
// was signed as a shadow place's (SignShadow), or ErrTicketInvalid unless
// this server signed exactly it for this user in this queue. A person's
// MAC is tried first, so a person's ticket costs one MAC.
func (t *Tickets) Verify(queue, user, signed string) (epoch, ticket int64, shadow bool, err error) {
	rest, ok := strings.CutPrefix(signed, ticketPrefix)
	if !ok {
		return 0, 0, false, ErrTicketInvalid
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return 0, 0, false, ErrTicketInvalid
	}
	e, n, mac := parts[0], parts[1], parts[2]
	epoch, errE := strconv.ParseInt(e, 10, 64)
	ticket, errN := strconv.ParseInt(n, 10, 64)
	// Numbers written any other way than Sign writes them ("+7", "07")
	// would be one ticket under two spellings.
	if errE != nil || errN != nil || strconv.FormatInt(epoch, 10) != e || strconv.FormatInt(ticket, 10) != n || ticket <= 0 {
		return 0, 0, false, ErrTicketInvalid
	}
	switch {
	case hmac.Equal([]byte(mac), []byte(t.mac(personLabel, queue, user, e, n))):
		return epoch, ticket, false, nil
	case hmac.Equal([]byte(mac), []byte(t.mac(shadowLabel, queue, user, e, n))):
		return epoch, ticket, true, nil
	}
	return 0, 0, false, ErrTicketInvalid
}

func (t *Tickets) mac(label, queue, user, epoch, ticket string) string {
	h := t.macs.Get().(hash.Hash)
	defer t.macs.Put(h)
	h.Reset()
	// NUL cannot occur in a queue name or a user id (queue.ValidateUserID),
	// so no two fields run into each other.
	h.Write([]byte(label + queue + "\x00" + user + "\x00" + epoch + "\x00" + ticket))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:macBytes])
}
