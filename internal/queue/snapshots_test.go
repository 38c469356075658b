package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
)

func fastQueue(t *testing.T, s *queue.Service, name string) queue.Config {
	t.Helper()
	c := queue.DefaultConfig()
	c.RatePerSecond, c.BatchSize, c.Interval = 10_000, 10, time.Millisecond
	if err := s.PutConfig(context.Background(), name, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// admitTick runs admission ticks on store until one is claimed.
func admitTick(t *testing.T, store queue.Store, q string) []string {
	t.Helper()
	for range 1000 {
		a, err := store.Admit(context.Background(), q, queue.NewTokens(10))
		if err != nil {
			t.Fatal(err)
		}
		if a.Ticked {
			return a.Admitted
		}
		time.Sleep(a.NextIn)
	}
	t.Fatal("no tick became due")
	return nil
}

// sameView compares what users are told, leaving out the jittered poll hint.
func sameView(a, b queue.View) bool {
	return a.State == b.State && a.Position == b.Position && a.Length == b.Length &&
		a.EstimatedWaitSeconds == b.EstimatedWaitSeconds && a.Token == b.Token && a.Paused == b.Paused &&
		(a.PollAfterSeconds == nil) == (b.PollAfterSeconds == nil)
}

// TestSnapshotAnswersAreTheStoresAnswers: one instance, random enters,
// leaves, admissions and polls; every status the service answers (most from
// its snapshot) is exactly what the store says at that moment. The snapshot
// never expires by age here, so only invalidation keeps it right.
func TestSnapshotAnswersAreTheStoresAnswers(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	svc := queue.NewService(store, time.Hour, nil)
	direct := queue.NewService(store, 0, nil)
	fastQueue(t, svc, "q")
	rnd := rand.New(rand.NewPCG(1, 2))
	users := 0
	var farBack uint64
	for step := range 3000 {
		switch op := rnd.IntN(100); {
		case op < 30:
			if _, err := svc.Enter(ctx, "q", fmt.Sprintf("u%d", users)); err != nil {
				t.Fatal(err)
			}
			users++
		case op < 33 && users > 0:
			if err := svc.Leave(ctx, "q", fmt.Sprintf("u%d", rnd.IntN(users))); err != nil {
				t.Fatal(err)
			}
		case op < 35:
			if len(admitTick(t, store, "q")) > 0 {
				svc.Changed("q") // what the instance's admitter does
			}
		case users > 0:
			u := fmt.Sprintf("u%d", rnd.IntN(users))
			got, err := svc.Status(ctx, "q", u)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := direct.Status(ctx, "q", u)
			if !sameView(got, want) {
				t.Fatalf("step %d: %s told %+v, the store says %+v", step, u, got, want)
			}
			if want.State == queue.Waiting && want.Position > 20 {
				farBack++
			}
		}
	}
	// Every user was entered through svc, so it knows every ticket: each
	// poll beyond two batches from the front is answered by the snapshot.
	hits, misses := svc.SnapshotAnswers()
	t.Logf("%d answers from the snapshot, %d from the store", hits, misses)
	if hits != farBack || hits == 0 {
		t.Errorf("the snapshot answered %d polls, want the %d far from the front", hits, farBack)
	}
}

// TestSnapshotOfAnotherInstanceCatchesUp: two instances on one store. What
// one does shows on the other within the snapshot age, and a user near the
// front is told READY at once, because near the front the store answers.
func TestSnapshotOfAnotherInstanceCatchesUp(t *testing.T) {
	ctx := context.Background()
	const age = 150 * time.Millisecond
	store := memstore.New(nil)
	a, b := queue.NewService(store, age, nil), queue.NewService(store, age, nil)
	cfg := fastQueue(t, a, "q")
	for i := range 100 {
		if _, err := a.Enter(ctx, "q", fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	pos := func(s *queue.Service, u string) queue.View {
		t.Helper()
		v, err := s.Status(ctx, "q", u)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := pos(b, "u50"); v.Position != 51 { // b learns u50's ticket from the store
		t.Fatalf("u50 at %d", v.Position)
	}
	pos(b, "u50") // and takes a snapshot
	admitted := admitTick(t, store, "q")
	a.Changed("q")
	if len(admitted) != cfg.BatchSize {
		t.Fatalf("admitted %d", len(admitted))
	}

	// a made the change and knows; b may be one tick behind, never more.
	if v := pos(a, "u50"); v.Position != 41 {
		t.Errorf("on the instance that admitted: u50 at %d, want 41", v.Position)
	}
	if v := pos(b, "u50"); v.Position != 41 && v.Position != 51 {
		t.Errorf("on the other instance at once: u50 at %d, want 41 or (stale) 51", v.Position)
	}
	// Near the front the store answers: u9, admitted, is READY everywhere.
	if v := pos(b, "u9"); v.State != queue.Ready || v.Token == "" {
		t.Errorf("u9 on the other instance: %+v, want READY with a token", v)
	}
	time.Sleep(age + 10*time.Millisecond)
	if v := pos(b, "u50"); v.Position != 41 || v.Length != 90 {
		t.Errorf("after the snapshot age: u50 at %d of %d, want 41 of 90", v.Position, v.Length)
	}

	// Leaving through a: b stops placing the user within the age.
	if err := a.Leave(ctx, "q", "u60"); err != nil {
		t.Fatal(err)
	}
	if v := pos(a, "u60"); v.State != queue.NotInQueue {
		t.Errorf("on the instance that left: %+v", v)
	}
	time.Sleep(age + 10*time.Millisecond)
	if v := pos(b, "u60"); v.State != queue.NotInQueue {
		t.Errorf("on the other instance after the age: %+v", v)
	}
	if v := pos(b, "u61"); v.Position != 51 {
		t.Errorf("u61 behind the leaver: %d, want 51", v.Position)
	}
}

// TestNoSnapshotWithAgeZero: age 0 sends every poll to the store.
func TestNoSnapshotWithAgeZero(t *testing.T) {
	ctx := context.Background()
	svc := queue.NewService(memstore.New(nil), 0, nil)
	fastQueue(t, svc, "q")
	for i := range 50 {
		svc.Enter(ctx, "q", fmt.Sprintf("u%d", i))
	}
	for range 10 {
		if _, err := svc.Status(ctx, "q", "u40"); err != nil {
			t.Fatal(err)
		}
	}
	if hits, misses := svc.SnapshotAnswers(); hits != 0 || misses != 0 {
		t.Errorf("hits %d misses %d", hits, misses)
	}
}

// lostStore is a store whose data can be lost, as Redis loses it: swap
// replaces everything with an empty store. keepEpoch makes the new store
// answer with the old epoch, as a restore or a failover to a replica that
// missed the last writes would (the queue was not created again).
type lostStore struct {
	mu sync.Mutex
	queue.Store
	keepEpoch int64
}

func (l *lostStore) store() queue.Store { l.mu.Lock(); defer l.mu.Unlock(); return l.Store }

func (l *lostStore) swap(s queue.Store, keepEpoch int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Store, l.keepEpoch = s, keepEpoch
}

func (l *lostStore) epoch(e int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keepEpoch != 0 {
		return l.keepEpoch
	}
	return e
}

func (l *lostStore) Enter(ctx context.Context, q, u string) (queue.Standing, error) {
	e, err := l.store().Enter(ctx, q, u)
	e.Epoch = l.epoch(e.Epoch)
	return e, err
}

func (l *lostStore) Status(ctx context.Context, q, u string) (queue.Standing, error) {
	e, err := l.store().Status(ctx, q, u)
	e.Epoch = l.epoch(e.Epoch)
	return e, err
}

func (l *lostStore) Snapshot(ctx context.Context, q string) (queue.Snapshot, error) {
	sn, err := l.store().Snapshot(ctx, q)
	sn.Epoch = l.epoch(sn.Epoch)
	return sn, err
}

func (l *lostStore) PutConfig(ctx context.Context, q string, c queue.Config) error {
	return l.store().PutConfig(ctx, q, c)
}

// TestRememberedTicketsDieWithTheLine: an instance answers u40's polls
// from its snapshot; the store then loses everything, the queue is created
// again and others enter (tickets from 1 again, so ticket 41 becomes
// someone else's). Polled again, u40 is NOT_IN_QUEUE, as the store says,
// never "WAITING, position 41" from the old line. Two ways a store loses
// data: the queue created again (a new epoch: noticed whatever happened
// since), and the same epoch with the line gone back in time (a restore, a
// replica that missed writes: noticed when this instance next reads the
// line and its last ticket is below one given here; 45 enter before that).
func TestRememberedTicketsDieWithTheLine(t *testing.T) {
	for _, c := range []struct {
		name      string
		keepEpoch bool
	}{{"created again", false}, {"restored", true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			const age = 10 * time.Millisecond
			first := memstore.New(nil)
			store := &lostStore{Store: first}
			svc := queue.NewService(store, age, nil)
			fastQueue(t, svc, "q")
			for i := range 50 {
				if _, err := svc.Enter(ctx, "q", fmt.Sprintf("u%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 { // the second answer comes from the snapshot
				if v, err := svc.Status(ctx, "q", "u40"); err != nil || v.Position != 41 {
					t.Fatalf("u40 before: %+v, %v", v, err)
				}
			}
			if hits, _ := svc.SnapshotAnswers(); hits == 0 {
				t.Fatal("the snapshot answered no poll: the test shows nothing")
			}
			var keep int64
			if c.keepEpoch {
				sn, _ := first.Snapshot(ctx, "q")
				keep = sn.Epoch
			}
			time.Sleep(time.Millisecond) // a later epoch for the new queue
			store.swap(memstore.New(nil), keep)
			// Another instance creates the queue again and lets people in.
			other := queue.NewService(store, 0, nil)
			fastQueue(t, other, "q")
			enter := func(from, to int) {
				for i := from; i < to; i++ {
					if _, err := other.Enter(ctx, "q", fmt.Sprintf("n%d", i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			enter(0, 45)
			if c.keepEpoch {
				// Ticket 31 is n30's now, 31st in line and so far from the
				// front that the snapshot would answer for u30.
				time.Sleep(2 * age) // this instance's snapshot is out of date
				if v, err := svc.Status(ctx, "q", "u30"); err != nil || v.State != queue.NotInQueue {
					t.Fatalf("u30 after the store went back: %+v, %v; want NOT_IN_QUEUE", v, err)
				}
				// u30's page shows the ticket it was given before: 31 may
				// be someone else's now, so it is not taken.
				svc.TicketShown("q", "u30", keep, 31)
				if v, err := svc.Status(ctx, "q", "u30"); err != nil || v.State != queue.NotInQueue {
					t.Fatalf("u30 showing its old ticket after the store went back: %+v, %v; want NOT_IN_QUEUE", v, err)
				}
			}
			enter(45, 60)
			time.Sleep(2 * age)
			if v, err := svc.Status(ctx, "q", "u40"); err != nil || v.State != queue.NotInQueue {
				t.Fatalf("u40 after the store lost the line and 60 entered: %+v, %v; want NOT_IN_QUEUE", v, err)
			}
			// The new line's users are placed right, by this instance too.
			if v, err := svc.Status(ctx, "q", "n50"); err != nil || v.Position != 51 {
				t.Fatalf("n50: %+v, %v", v, err)
			}
		})
	}
}

// TestSnapshotLeavingThePreQueueElsewhere: a user waiting for the opening
// who leaves through another instance is no longer told, by an instance
// that answered them before, that they wait for it (the fairness check's
// network history: PRE_QUEUE 116 ms after the leave was answered, with
// snapshots at most 100 ms old).
func TestSnapshotLeavingThePreQueueElsewhere(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	one, other := queue.NewService(store, time.Hour, nil), queue.NewService(store, time.Hour, nil)
	c := fastQueue(t, one, "q")
	c.OpensAt = time.Now().Add(time.Hour)
	if err := one.PutConfig(ctx, "q", c); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b"} {
		if v, err := one.Enter(ctx, "q", u); err != nil || v.OpensAt.IsZero() {
			t.Fatalf("%s entering before the opening: %+v, %v", u, v, err)
		}
	}
	for range 3 { // the second poll onwards could come from the snapshot
		if v, err := one.Status(ctx, "q", "a"); err != nil || v.OpensAt.IsZero() {
			t.Fatalf("a before leaving: %+v, %v", v, err)
		}
	}
	if err := other.Leave(ctx, "q", "a"); err != nil {
		t.Fatal(err)
	}
	if v, err := one.Status(ctx, "q", "a"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("a after leaving through the other instance: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
}

// TestShownTicketsAnswerAsTheStore: users enter through one instance and
// poll another that knows them only by the tickets they show (a page on
// the front document: TicketShown). Random enters, leaves, re-entries and
// admissions; each user shows the ticket of their latest enter or, now
// and then, one from before they left. Every status the second instance
// answers is exactly the store's, most from its snapshot; a ticket of
// another epoch is not taken, and drops nothing the instance knew.
func TestShownTicketsAnswerAsTheStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(nil)
	a, b := queue.NewService(store, time.Hour, nil), queue.NewService(store, time.Hour, nil)
	direct := queue.NewService(store, 0, nil)
	fastQueue(t, a, "q")
	if _, err := b.Snapshot(ctx, "q"); err != nil { // b's view of the line, as its front document makes it
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	type shown struct{ epoch, ticket int64 }
	latest, older := map[string]shown{}, map[string]shown{}
	users := 0
	enter := func(u string) {
		v, err := a.Enter(ctx, "q", u)
		if err != nil {
			t.Fatal(err)
		}
		if v.State == queue.Waiting && v.Ticket != 0 {
			if old, ok := latest[u]; ok && old.ticket != v.Ticket {
				older[u] = old
			}
			latest[u] = shown{v.Epoch, v.Ticket}
		}
	}
	var farBack uint64
	for step := range 3000 {
		switch op := rnd.IntN(100); {
		case op < 30 || users == 0:
			enter(fmt.Sprintf("u%d", users))
			users++
		case op < 33:
			if err := a.Leave(ctx, "q", fmt.Sprintf("u%d", rnd.IntN(users))); err != nil {
				t.Fatal(err)
			}
		case op < 35:
			enter(fmt.Sprintf("u%d", rnd.IntN(users))) // back after leaving, or keeping their place
		case op < 37:
			admitTick(t, store, "q")
		default:
			u := fmt.Sprintf("u%d", rnd.IntN(users))
			tk, ok := latest[u]
			if old, was := older[u]; was && rnd.IntN(4) == 0 {
				tk, ok = old, true
			}
			if !ok {
				continue
			}
			b.Changed("q") // another instance's changes show within the age; here at once
			b.TicketShown("q", u, tk.epoch, tk.ticket)
			got, err := b.Status(ctx, "q", u)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := direct.Status(ctx, "q", u)
			if !sameView(got, want) {
				t.Fatalf("step %d: %s showing ticket %d told %+v, the store says %+v", step, u, tk.ticket, got, want)
			}
			if want.State == queue.Waiting && want.Position > 20 {
				farBack++
			}
		}
	}
	hits, misses := b.SnapshotAnswers()
	t.Logf("%d answers from the snapshot, %d from the store, %d far from the front", hits, misses, farBack)
	if hits == 0 || hits > farBack {
		t.Errorf("the snapshot answered %d polls, want some and at most the %d far from the front", hits, farBack)
	}

	// A ticket of another epoch (a line Redis lost, created again) is not
	// taken: the store answers, and what b knew stays known.
	var known string
	for u, tk := range latest {
		if v, _ := direct.Status(ctx, "q", u); v.State == queue.Waiting && v.Position > 20 && v.Ticket == tk.ticket {
			known = u
			break
		}
	}
	if known == "" {
		t.Fatal("nobody far back to poll")
	}
	b.Changed("q")
	b.TicketShown("q", known, latest[known].epoch, latest[known].ticket)
	hits, _ = b.SnapshotAnswers()
	if _, err := b.Status(ctx, "q", known); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.SnapshotAnswers(); h != hits+1 {
		t.Fatalf("%s, known to b, not answered from its snapshot", known)
	}
	// Someone b has never heard of is answered from its snapshot once they
	// show their ticket, and not before.
	enter("newcomer")
	b.Changed("q")
	hits, _ = b.SnapshotAnswers()
	if _, err := b.Status(ctx, "q", "newcomer"); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.SnapshotAnswers(); h != hits {
		t.Fatal("b answered a newcomer it did not know from its snapshot")
	}
	enter("newcomer2")
	b.Changed("q")
	b.TicketShown("q", "newcomer2", latest["newcomer2"].epoch, latest["newcomer2"].ticket)
	if _, err := b.Status(ctx, "q", "newcomer2"); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.SnapshotAnswers(); h != hits+1 {
		t.Error("a newcomer showing their ticket was not answered from b's snapshot")
	}

	b.TicketShown("q", "stranger", latest[known].epoch+1, 1)
	if v, err := b.Status(ctx, "q", "stranger"); err != nil || v.State != queue.NotInQueue {
		t.Errorf("a stranger showing another epoch's ticket told %+v %v, want NOT_IN_QUEUE from the store", v, err)
	}
	hits, _ = b.SnapshotAnswers()
	if _, err := b.Status(ctx, "q", known); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.SnapshotAnswers(); h != hits+1 {
		t.Errorf("after another epoch's ticket was shown, %s was no longer answered from the snapshot", known)
	}
}

// TestShownTicketsNoticeAStoreThatWentBack: an instance that knows its
// users only by the tickets they show (pages on the front document) still
// notices a store gone back in time within the epoch, from a ticket shown
// above the store's last, and from then on takes no ticket shown in the
// epoch: a user whose place was lost is told NOT_IN_QUEUE, not the place
// their ticket number now holds in the new line.
func TestShownTicketsNoticeAStoreThatWentBack(t *testing.T) {
	ctx := context.Background()
	const age = 10 * time.Millisecond
	first := memstore.New(nil)
	store := &lostStore{Store: first}
	entering := queue.NewService(store, 0, nil)
	fastQueue(t, entering, "q")
	tickets := map[string]int64{}
	for i := range 50 {
		u := fmt.Sprintf("u%d", i)
		v, err := entering.Enter(ctx, "q", u)
		if err != nil {
			t.Fatal(err)
		}
		tickets[u] = v.Ticket
	}
	sn, _ := first.Snapshot(ctx, "q")
	svc := queue.NewService(store, age, nil)
	if _, err := svc.Snapshot(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	svc.TicketShown("q", "u40", sn.Epoch, tickets["u40"])
	if v, err := svc.Status(ctx, "q", "u40"); err != nil || v.Position != 41 {
		t.Fatalf("u40 showing ticket %d before: %+v, %v; want position 41", tickets["u40"], v, err)
	}
	if hits, _ := svc.SnapshotAnswers(); hits != 1 {
		t.Fatalf("%d answers from the snapshot, want u40's: the test shows nothing", hits)
	}

	store.swap(memstore.New(nil), sn.Epoch) // the same epoch, an empty line
	other := queue.NewService(store, 0, nil)
	fastQueue(t, other, "q")
	for i := range 45 { // tickets 1..45 given again
		if _, err := other.Enter(ctx, "q", fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * age) // svc's snapshot is out of date
	// u47 shows ticket 48, above the store's last (45): the next read notices.
	svc.TicketShown("q", "u47", sn.Epoch, tickets["u47"])
	if v, err := svc.Status(ctx, "q", "u47"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("u47 after the store went back: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
	// u30's ticket 31 is n30's now, far enough back for a snapshot answer.
	svc.TicketShown("q", "u30", sn.Epoch, tickets["u30"])
	if v, err := svc.Status(ctx, "q", "u30"); err != nil || v.State != queue.NotInQueue {
		t.Fatalf("u30 showing ticket 31 after the store went back: %+v, %v; want NOT_IN_QUEUE", v, err)
	}
	if v, err := svc.Status(ctx, "q", "n30"); err != nil || v.Position != 31 {
		t.Fatalf("n30: %+v, %v; want position 31", v, err)
	}
}
