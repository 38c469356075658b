// Package degraded is --on-store-error: what waitroom does about a queue
// while the line's store does not answer for it (its breaker is open,
// package breaker).
//
// Under Wait (the default) nothing changes: a protected request answers
// 503 + Retry-After, as every request that needs the store does. Under
// Admit the shop stays up and the line's promise is given up for the
// outage: the gateway forwards protected requests without an entry,
// marked X-Waitroom-Degraded; the API answers enter and status with a
// degraded READY whose token the order API accepts only while it, too,
// runs under Admit and finds the queue's store away (Policy.Accept).
//
// A degraded token is no entry in the store: it is an HMAC of the queue,
// the user and an expiry under the auth secret, verifiable without the
// store. Every one issued to a user for a queue within one token TTL is
// the same string, so the orders table's unique key on the token lets a
// user buy at most once per token TTL during an outage, and the
// conditional stock decrement keeps the stock from going below zero.
package degraded

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is --on-store-error.
type Mode string

const (
	// Wait: a request that needs the store answers 503 + Retry-After.
	Wait Mode = "wait"
	// Admit: protected requests go through, marked degraded.
	Admit Mode = "admit"
)

// ParseMode reads --on-store-error.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Wait, Admit:
		return m, nil
	}
	return "", fmt.Errorf("must be %s or %s, got %q", Wait, Admit, s)
}

// Header marks a request the gateway forwarded without an entry because
// the store did not answer; HeaderValue is its value. The gateway strips
// every client-sent X-Waitroom-* header, this one included, so only the
// gateway writes it.
const (
	Header      = "X-Waitroom-Degraded"
	HeaderValue = "store-unavailable"
)

// Outage says whether the queue's store is away (breaker.Breaker).
type Outage interface {
	Open(queue string) bool
}

// Policy is the mode with what it needs. A nil *Policy is Wait.
type Policy struct {
	mode   Mode
	outage Outage
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// New returns the policy: mode, the outage it follows, the secret degraded
// tokens are signed with (the auth secret) and how long one is good for
// (at least ttl, less than 2 × ttl).
func New(mode Mode, outage Outage, secret []byte, ttl time.Duration, now func() time.Time) *Policy {
	if now == nil {
		now = time.Now
	}
	return &Policy{mode: mode, outage: outage, secret: secret, ttl: ttl, now: now}
}

// Mode is the policy's mode (Wait for nil).
func (p *Policy) Mode() Mode {
	if p == nil {
		return Wait
	}
	return p.mode
}

// Admits reports Admit.
func (p *Policy) Admits() bool { return p != nil && p.mode == Admit }

// AdmitNow reports whether a request about the queue is admitted degraded
// at once, without asking the store: Admit, and the queue's breaker open.
func (p *Policy) AdmitNow(queue string) bool { return p.Admits() && p.outage.Open(queue) }

// RefuseNow reports whether a protected request through the gateway is
// refused at once (503), without asking the store: Wait, and the queue's
// breaker open.
func (p *Policy) RefuseNow(queue string) bool {
	return p != nil && p.mode == Wait && p.outage.Open(queue)
}

// prefix starts every degraded token (never an ordinary token's start:
// those are base64url of random bytes, without a dot).
const prefix = "wrd1."

// Issue is the degraded token for the user in the queue and when it
// expires.
func (p *Policy) Issue(queue, user string) (string, time.Time) {
	ttl := max(p.ttl, time.Second)
	exp := p.now().Truncate(ttl).Add(2 * ttl)
	e := strconv.FormatInt(exp.Unix(), 10)
	return prefix + e + "." + p.mac(queue, user, e), exp.UTC()
}

func (p *Policy) mac(queue, user, exp string) string {
	h := hmac.New(sha256.New, p.secret)
	fmt.Fprintf(h, "waitroom degraded entry\x00%s\x00%s\x00%s", queue, user, exp)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// IsToken reports whether token has a degraded token's shape.
func IsToken(token string) bool { return strings.HasPrefix(token, prefix) }

// Valid reports whether token is a degraded token issued to the user for
// the queue and not expired. It does not say it may be used (Accept).
func (p *Policy) Valid(queue, user, token string) bool {
	if p == nil || !IsToken(token) {
		return false
	}
	e, mac, ok := strings.Cut(token[len(prefix):], ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || !p.now().Before(time.Unix(exp, 0)) {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(p.mac(queue, user, e)))
}

// Accept reports whether an order may be taken on token without the
// store: this instance runs under Admit, the queue's store is away (its
// breaker open) and the token is a valid degraded token of the user for
// the queue. Once the store answers again, degraded tokens are worth
// nothing: the user enters again and gets a real one.
func (p *Policy) Accept(queue, user, token string) bool {
	return p.AdmitNow(queue) && p.Valid(queue, user, token)
}
