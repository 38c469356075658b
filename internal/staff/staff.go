// Package staff is who may change the sale, and who did (issue 56): the
// three roles, who an actor is, the named tokens that stand for people and
// scripts, the admin page's signed-in sessions, and the audit log of what
// each did. It knows neither HTTP nor the stores: package httpapi asks it,
// and both stores keep its records (Store), in their section for things
// that belong to no queue.
package staff

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Role is what an actor may do. Each role may do all that the roles below
// it may.
type Role string

const (
	// Viewer reads: stats, history, rollups, the report, the schedule, the
	// suspects, the audit log.
	Viewer Role = "viewer"
	// Operator adds the night's levers: pause and resume, the rate, the
	// message, sold out and restock, clearing a suspect.
	Operator Role = "operator"
	// Admin adds everything else: queues, products, codes, phases, lanes,
	// tokens and every other setting.
	Admin Role = "admin"
)

// Roles are the roles, lowest first.
var Roles = []Role{Viewer, Operator, Admin}

// rank orders the roles; an unknown role ranks above every known one, so
// that a need nobody declared is met by nobody (fail closed) and an
// unknown role held meets nothing (Allows checks both).
func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 4
}

// Allows reports whether an actor holding r may do what needs need. An
// unknown role (held or needed) allows nothing.
func (r Role) Allows(need Role) bool {
	if r.rank() > Admin.rank() {
		return false
	}
	return r.rank() >= need.rank()
}

// ParseRole reads a role's name (ErrUnknownRole for any other).
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case Viewer, Operator, Admin:
		return r, nil
	}
	return "", fmt.Errorf("%w: %q (want viewer, operator or admin)", ErrUnknownRole, s)
}

// ErrUnknownRole: a role that is not viewer, operator or admin.
var ErrUnknownRole = errors.New("unknown role")

// Kind is how an actor was known.
type Kind string

const (
	// KindAdminToken: the one --admin-token, an admin.
	KindAdminToken Kind = "admin-token"
	// KindToken: a named token (Token), by its name.
	KindToken Kind = "token"
	// KindSignIn: a person signed in to the admin page through the
	// shop's identity provider (OpenID Connect), by subject and e-mail.
	KindSignIn Kind = "oidc"
	// KindQueuesFile: the queues file, loaded at start or reloaded.
	KindQueuesFile Kind = "queues-file"
	// KindBackend: the shop's backend, by its commands (sold-out, restock:
	// gateway.CommandHeader).
	KindBackend Kind = "backend"
	// KindNobody: credentials that named nobody (a wrong or revoked token,
	// none at all): only ever an audit entry's actor for a refusal.
	KindNobody Kind = "nobody"
)

// Actor is who made a request or a change. It never holds a secret: a
// token is named by its name, never by its value or hash.
type Actor struct {
	Kind Kind `json:"kind"`
	// Name is a named token's name (KindToken).
	Name string `json:"name,omitempty"`
	// Subject and Email are a signed-in person's (KindSignIn), as their
	// identity provider's ID token said them.
	Subject string `json:"subject,omitempty"`
	Email   string `json:"email,omitempty"`
	// Role is what the actor may do.
	Role Role `json:"role,omitempty"`
	// Addr is the client's address, as package clientaddr judged it
	// ("" where there is no request: the queues file, a reload).
	Addr string `json:"addr,omitempty"`
}

// Label is the actor in a few words, for logs and the report: "token
// ops-night", "oidc ana@shop.example", "queues-file".
func (a Actor) Label() string {
	switch {
	case a.Kind == KindToken && a.Name != "":
		return "token " + a.Name
	case a.Kind == KindSignIn && a.Email != "":
		return "oidc " + a.Email
	case a.Kind == KindSignIn:
		return "oidc " + a.Subject
	}
	return string(a.Kind)
}

type actorKey struct{}

// WithActor is ctx carrying a: the calls it reaches record a as who made
// their changes (the audit log).
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf is the actor ctx carries (false: none, as for the loops that
// change nothing an operator asked for).
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// Token is a named token as the store keeps it: never the token itself,
// only its SHA-256 (HashToken).
type Token struct {
	Name string
	Role Role
	// Hash is HashToken of the token, its key in the store.
	Hash     string
	Created  time.Time
	LastUsed time.Time // zero: never used
	Expires  time.Time // zero: never
}

// Live reports whether t may be used at now.
func (t Token) Live(now time.Time) bool { return t.Expires.IsZero() || now.Before(t.Expires) }

// Session is a person signed in to the admin page (OpenID Connect), as the
// store keeps it: under the SHA-256 of the cookie's value (HashToken),
// never the value itself.
type Session struct {
	Hash    string
	Subject string
	Email   string
	Role    Role
	// CSRF is the value every change made in the session must carry
	// beside the cookie (a header the page sets; a cross-site form cannot).
	CSRF    string
	Created time.Time
	Expires time.Time
}

// Outcome is how an audited attempt ended.
type Outcome string

const (
	// Done: the change was made.
	Done Outcome = "done"
	// Refused: the credentials named nobody (401), or the actor's role was
	// too low (403 forbidden_role); at most a few a minute are logged
	// (the rest are counted: Entry.Repeats).
	Refused Outcome = "refused"
)

// Entry is one line of the audit log: who did what, when, from where, to
// which queue, and each changed setting's value before and after. Secrets
// never enter it: access codes, seeds, tokens, webhook URLs' credentials.
type Entry struct {
	// ID orders the entries (the store sets it: ascending with At).
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
	Actor Actor     `json:"actor"`
	// Queue is the queue changed ("" for none: a token, a product).
	Queue string `json:"queue,omitempty"`
	// Op is what was done, in a few words: the admin operation's method
	// and route ("PATCH /admin/v1/queues/{queue}"), "reload" (the queues
	// file), "sold-out" or "restock" (the backend's commands).
	Op      string   `json:"op"`
	Outcome Outcome  `json:"outcome"`
	Changes []Change `json:"changes,omitempty"`
	// Detail says more: for a refusal, why (the field above the role);
	// for a product's change, which product (audit part).
	Detail string `json:"detail,omitempty"`
	// Repeats counts the refusals like this one that were not logged
	// since the last that was (rate-limited).
	Repeats int64 `json:"repeats,omitempty"`
}

// Change is one setting's (or field's) value before and after, as JSON
// values; a secret is never one (its change says only "changed").
type Change struct {
	Field  string `json:"field"`
	Before any    `json:"before"`
	After  any    `json:"after"`
}

// Filter selects audit entries: by queue, by actor (its Label or a part of
// it: a token's name, an e-mail), within [Since, Until] (zero: open), the
// newest Limit of them (0: the store's most).
type Filter struct {
	Queue        string
	Actor        string
	Since, Until time.Time
	Limit        int
}

// ErrTokenExists: a named token of that name is kept already.
var ErrTokenExists = errors.New("a token of that name exists")

// TokenStore keeps the named tokens.
type TokenStore interface {
	// PutToken keeps t (ErrTokenExists when its name is taken).
	PutToken(ctx context.Context, t Token) error
	// TokenByHash reads the token whose hash is hash (false: none kept).
	TokenByHash(ctx context.Context, hash string) (Token, bool, error)
	// Tokens lists every kept token, by name.
	Tokens(ctx context.Context) ([]Token, error)
	// DeleteToken revokes the token of that name (false: none kept).
	DeleteToken(ctx context.Context, name string) (bool, error)
	// TouchToken sets the LastUsed of the token whose hash is hash to at,
	// if later than the one kept (a token not kept is not an error).
	TouchToken(ctx context.Context, hash string, at time.Time) error
}

// SessionStore keeps the admin page's signed-in sessions until they expire.
type SessionStore interface {
	PutSession(ctx context.Context, s Session) error
	// Session reads the live session whose hash is hash (false: none, or
	// expired).
	Session(ctx context.Context, hash string) (Session, bool, error)
	// DeleteSession ends it (signing out); one not kept is not an error.
	DeleteSession(ctx context.Context, hash string) error
}

// AuditStore keeps the audit log, each entry for keep after it was made
// (the report's retention: --rollup-retention).
type AuditStore interface {
	// Append keeps e and answers it with its ID set.
	Append(ctx context.Context, e Entry, keep time.Duration) (Entry, error)
	// Audit lists the kept entries f selects, oldest first.
	Audit(ctx context.Context, f Filter) ([]Entry, error)
}

// Store is all that the stores keep for this package.
type Store interface {
	TokenStore
	SessionStore
	AuditStore
}
