package staff

import (
	"net/netip"
	"time"
)

// Refusals are rate-limited, so that a script guessing tokens cannot flood
// the log (or the webhook it feeds), nor jam it so that others' refusals go
// unlogged: at most refusalBurst a refusalWindow are logged per actor (a
// token, a person signed in, the admin token) and per address range of
// those who name nobody (addrRange: one machine, or one network, has many
// addresses); those from nobody together at most refusalNobodies, and all
// at most refusalCap. The rest are counted (Suppressed) and in the next one
// logged of their own actor or range (Entry.Repeats).
const (
	refusalBurst     = 3
	refusalWindow    = time.Minute
	refusalNobodies  = 30
	refusalCap       = 300
	refusalKeys      = 4096
	overflowRefusals = "\x00overflow"
)

// refusals are one actor's (or address range's) refusals: logged in the
// current window, and not logged since the last that was.
type refusals struct {
	logged  int
	pending int64
}

// refusalTable tracks the keys refused in the current window (cur) and
// the last (prev): a key not refused for a whole window is dropped with
// the next turn, its pending ones then only counted (Suppressed). Each
// window tracks at most refusalKeys; past them, the rest share one key
// (overflowRefusals), fail closed: a flood of keys logs less, never more.
type refusalTable struct{ cur, prev map[string]*refusals }

func (t *refusalTable) turn() { t.prev, t.cur = t.cur, map[string]*refusals{} }

func (t *refusalTable) get(key string) *refusals {
	if r := t.cur[key]; r != nil {
		return r
	}
	if len(t.cur) >= refusalKeys {
		key = overflowRefusals
		if r := t.cur[key]; r != nil {
			return r
		}
	}
	r := t.prev[key]
	if r == nil {
		r = &refusals{}
	}
	delete(t.prev, key)
	r.logged = 0
	t.cur[key] = r
	return r
}

// refusalLimiter is the Auditor's limit on refusals logged. Who names
// nobody cannot crowd out who does: each has a table of its own.
type refusalLimiter struct {
	since            time.Time // the current window's start
	logged, nobodies int       // logged in it: in all, from nobody
	actors, nobody   refusalTable
}

func newRefusalLimiter() refusalLimiter {
	return refusalLimiter{actors: refusalTable{cur: map[string]*refusals{}}, nobody: refusalTable{cur: map[string]*refusals{}}}
}

// admit says whether a refusal by actor at at is logged, and how many of
// its actor's (or range's) were not since the last that was. The caller
// holds the Auditor's lock.
func (l *refusalLimiter) admit(actor Actor, at time.Time) (int64, bool) {
	if quiet := at.Sub(l.since); quiet >= refusalWindow {
		l.since, l.logged, l.nobodies = at, 0, 0
		l.actors.turn()
		l.nobody.turn()
		if quiet >= 2*refusalWindow { // the last window saw none either
			l.actors.turn()
			l.nobody.turn()
		}
	}
	nobody := actor.Kind == KindNobody
	var r *refusals
	if nobody {
		r = l.nobody.get(addrRange(actor.Addr))
	} else {
		r = l.actors.get(actor.Label())
	}
	if r.logged >= refusalBurst || l.logged >= refusalCap || nobody && l.nobodies >= refusalNobodies {
		r.pending++
		return 0, false
	}
	r.logged++
	l.logged++
	if nobody {
		l.nobodies++
	}
	repeats := r.pending
	r.pending = 0
	return repeats, true
}

// addrRange is the network addr is in, as far as one client is likely to
// hold: its /24 (IPv4) or /64 (IPv6); "" for an address not known.
func addrRange(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p.String()
}
