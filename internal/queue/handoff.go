package queue

import "context"

// claim is Enter with a handoff code's hash (lane.Join.Handoff, issue 55):
// the place that code carries moves to user (Store.ClaimHandoff), and
// this instance forgets at once the ticket it knew the place by for the
// session it moved from, so that session's next status is the store's
// answer, MOVED, and never the snapshot's arithmetic on a ticket it no
// longer holds. (Another instance that learned the old session's ticket
// from the store answers it from its snapshot until the ticket nears the
// front; the page asks with no ticket shown while a link is out, so only
// such an instance can: docs/page.md.) A closed queue, passthrough and
// the join policy do not apply: no place is taken, one changes hands.
func (s *Service) claim(ctx context.Context, queue, user, codeHash string) (View, error) {
	if err := validate(queue, user); err != nil {
		return View{}, err
	}
	if _, err := s.ConfigInForce(ctx, queue); err != nil {
		return View{}, err
	}
	from, e, err := s.store.ClaimHandoff(ctx, queue, codeHash, user)
	if err != nil {
		return View{}, err
	}
	if s.snaps != nil {
		s.snaps.remember(queue, from, Standing{State: Moved})
		s.snaps.remember(queue, user, e)
	}
	s.presence.note(queue, user, e, false) // the claim is a click on the page it moves to
	s.changed(queue)                       // held polls of the old session look again, and hear MOVED
	return s.view(ctx, queue, e, false), nil
}
