package admission

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// A fair opening (Config.OpensAt). Users entering before it wait in a
// pre-queue with no place; at OpensAt an instance closes the pre-queue (a
// ticket is reserved for each of its users, so anyone entering from then on
// is behind them all), draws their order uniformly at random (crypto/rand,
// Fisher–Yates) and places them in line in that order (Store.OpenDue,
// Store.Place), whether or not admission is paused. Admission waits until
// they are all placed. Arriving earlier, or by script, gains nothing: every
// order of the pre-queue is as likely as any other.

// openLease is how long an instance may take to place an opening before
// another takes it over (each placed chunk renews it).
const openLease = 30 * time.Second

// OpenLine places the queue's opening if it is due by the store's clock,
// drawing the order from random (crypto/rand.Reader in production; a seeded
// source makes a test repeatable). It reports the opening as the store saw
// it, and how many users it placed.
func OpenLine(ctx context.Context, store queue.Store, queue, owner string, random io.Reader) (queue.Opening, int, error) {
	o, err := store.OpenDue(ctx, queue, owner, openLease)
	if err != nil || !o.Due {
		return o, 0, err
	}
	order, err := DrawOrder(o.Pending, random)
	if err != nil {
		return o, 0, err
	}
	_, err = store.Place(ctx, queue, owner, order, openLease)
	return o, len(order), err
}

// DrawOrder shuffles users in place uniformly at random (Fisher–Yates) with
// random as the source of randomness, and returns them.
func DrawOrder(users []string, random io.Reader) ([]string, error) {
	src := bufio.NewReaderSize(random, 4096)
	for i := len(users) - 1; i > 0; i-- {
		j, err := uniform(src, uint64(i)+1)
		if err != nil {
			return nil, err
		}
		users[i], users[j] = users[j], users[i]
	}
	return users, nil
}

// uniform is a number in [0, n) with every value equally likely: 64 random
// bits, drawn again while they fall in the incomplete last block of n.
func uniform(src io.Reader, n uint64) (uint64, error) {
	limit := math.MaxUint64 - math.MaxUint64%n
	var b [8]byte
	for {
		if _, err := io.ReadFull(src, b[:]); err != nil {
			return 0, err
		}
		if v := binary.LittleEndian.Uint64(b[:]); v < limit {
			return v % n, nil
		}
	}
}
