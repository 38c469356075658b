package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/queue"
)

// handoffs are a queue's handoff links and the marks of the sessions a
// place moved away from (issue 55), the in-process twins of Redis's
// {q}:handoff:<hash> and {q}:moved:<user> keys. Exported fields: a
// snapshot keeps them (queueImage.Handoffs; nil in one from before).
type handoffs struct {
	// Codes are the links' codes by their hash, each with the user whose
	// place it carries and when it lapses.
	Codes map[string]handoffCode
	// Moved holds, for each session a place moved away from, when it stops
	// being told MOVED.
	Moved map[string]time.Time
}

type handoffCode struct {
	User    string
	Expires time.Time
}

// sweep forgets the lapsed codes and marks (Sweep, and each new code).
func (h *handoffs) sweep(now time.Time) {
	maps.DeleteFunc(h.Codes, func(_ string, c handoffCode) bool { return !c.Expires.After(now) })
	maps.DeleteFunc(h.Moved, func(_ string, until time.Time) bool { return !until.After(now) })
}

// clone is a copy a snapshot may keep while the queue changes.
func (h handoffs) clone() handoffs {
	return handoffs{Codes: maps.Clone(h.Codes), Moved: maps.Clone(h.Moved)}
}

// PutHandoff implements queue.Store.
func (s *Store) PutHandoff(_ context.Context, name, user, codeHash string, ttl time.Duration) (time.Time, error) {
	o := &op{kind: opPutHandoff, queue: name, user: user, token: codeHash, dur: ttl}
	return change(s, o, func(q *state, now time.Time) (time.Time, bool, error) {
		if !q.handable(user, now) {
			return time.Time{}, false, handoff.ErrNoPlace
		}
		q.ho.sweep(now)
		if q.ho.Codes == nil {
			q.ho.Codes = map[string]handoffCode{}
		}
		exp := now.Add(ttl)
		q.ho.Codes[codeHash] = handoffCode{User: user, Expires: exp}
		return exp.UTC(), true, nil
	})
}

// handable says whether user holds a place a handoff can carry: one in a
// line or the pre-queue before it closes (an opening being placed has
// fixed its draw's participants by name), or a live token.
func (q *state) handable(user string, now time.Time) bool {
	e, ok := q.standing(user, now)
	return ok && !(e.PreQueue && q.openState == "placing")
}

// ClaimHandoff implements queue.Store.
func (s *Store) ClaimHandoff(_ context.Context, name, codeHash, user string) (string, queue.Standing, error) {
	type claimed struct {
		from string
		e    queue.Standing
	}
	o := &op{kind: opClaimHandoff, queue: name, user: user, token: codeHash}
	c, err := change(s, o, func(q *state, now time.Time) (claimed, bool, error) {
		code, ok := q.ho.Codes[codeHash]
		if !ok || !code.Expires.After(now) {
			return claimed{}, false, handoff.ErrGone
		}
		if _, held := q.standing(user, now); held {
			return claimed{}, false, handoff.ErrAlreadyInLine
		}
		from := code.User
		if l, ok := q.inflight[from]; ok && l.until.After(now) {
			return claimed{}, false, queue.ErrTokenInUse
		}
		delete(q.ho.Codes, codeHash)
		if !q.handable(from, now) {
			return claimed{}, true, handoff.ErrGone
		}
		q.move(from, user, now)
		e, _ := q.standing(user, now)
		return claimed{from, e}, true, nil
	})
	return c.from, c.e, err
}

// move gives to (who holds nothing) everything of from's place, as it
// was, and marks from as moved: every per-user map of the state.
func (q *state) move(from, to string, now time.Time) {
	if t, ok := q.tokens[to]; ok { // to's token whose time is up
		q.dropToken(to, t, now, &q.expired)
	}
	q.line.rename(from, to)
	q.sh.rename(from, to)
	if _, l := q.laneOf(from); l != nil {
		t := l.tickets[from]
		l.remove(from)
		l.insert(to, t)
	}
	if a, ok := q.pre[from]; ok {
		delete(q.pre, from)
		q.pre[to] = a
		if name, ok := q.ln.pre[from]; ok {
			q.dropPreLane(from)
			q.setPreLane(to, name)
		}
	}
	if t, ok := q.tokens[from]; ok {
		delete(q.tokens, from)
		q.tokens[to] = t
		q.issued = append(q.issued, issuedToken{user: to, value: t.value, expires: t.expires})
	}
	delete(q.inflight, from) // a lapsed lock (a live one refused the claim)
	renameKey(q.seen, from, to)
	renameKey(q.hidden, from, to) // a hidden page's mark stays one (issue 55)
	renameKey(q.joined, from, to)
	if q.ho.Moved == nil {
		q.ho.Moved = map[string]time.Time{}
	}
	delete(q.ho.Moved, to)
	q.ho.Moved[from] = now.Add(max(handoff.MovedFor, q.cfg.InForce(now).TokenTTL))
}

// renameKey moves m's entry from one key to another, if it has one.
func renameKey[V any](m map[string]V, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}

// rename gives from's slot in line, if any, to to.
func (l *line) rename(from, to string) {
	t, ok := l.tickets[from]
	if !ok {
		return
	}
	delete(l.tickets, from)
	l.tickets[to] = t
	l.users[t-l.base] = to
}

// rename gives from's shadow place, or the place cleared from the shadow
// line, to to: a shadow place keeps its ticket and mark; a cleared place
// its score, among the equal ones ordered by user as Redis orders them.
func (sh *shadow) rename(from, to string) {
	if t, ok := sh.byUser[from]; ok {
		i, _ := sh.find(t)
		sh.Places[i].User = to
		delete(sh.byUser, from)
		sh.byUser[to] = t
	}
	if at, ok := sh.clearedAt[from]; ok {
		i, _ := slices.BinarySearchFunc(sh.Cleared, clearedPlace{at, from}, compareCleared)
		sh.Cleared = slices.Delete(sh.Cleared, i, i+1)
		c := clearedPlace{at, to}
		j, _ := slices.BinarySearchFunc(sh.Cleared, c, compareCleared)
		sh.Cleared = slices.Insert(sh.Cleared, j, c)
		delete(sh.clearedAt, from)
		sh.clearedAt[to] = at
	}
}

// movedStanding is the answer to a user with no place whose place moved
// away (Status), if it did lately.
func (q *state) movedStanding(user string, now time.Time) (queue.Standing, bool) {
	until, ok := q.ho.Moved[user]
	if !ok || !until.After(now) {
		return queue.Standing{}, false
	}
	return queue.Standing{State: queue.Moved, Pace: q.pace(now), Epoch: q.epoch}, true
}
