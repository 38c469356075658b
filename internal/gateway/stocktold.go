package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// stockTold remembers the stock the upstream's commands last set on each
// queue through this gateway, and when that was logged. A backend may send
// "sold-out" on every answer once it has nothing left (on any route, at any
// rate): each is carried out, but a repeat of the stock last told is logged
// at most once a repeatLogEvery, so the log says when the stock changed,
// as it says when a queue's settings did, not how many answers said so.
// A repeat is still logged now and then because the stock may have changed
// meanwhile where this gateway does not see it (the admin API, another
// instance).
type stockTold struct {
	mu   sync.Mutex
	last map[string]told
}

type told struct {
	stock queue.Stock
	at    time.Time
}

// repeatLogEvery is how often a command that repeats the stock last told
// is logged again.
const repeatLogEvery = time.Minute

// changed records st as queue q's at now, and reports whether it is worth a
// line: it differs from the one recorded before (or none was), or that one
// was logged repeatLogEvery ago or more.
func (t *stockTold) changed(q string, st queue.Stock, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if before, ok := t.last[q]; ok && before.stock == st && now.Sub(before.at) < repeatLogEvery {
		return false
	}
	if t.last == nil {
		t.last = map[string]told{}
	}
	t.last[q] = told{st, now}
	return true
}

// logStockChanged writes the info line of a stock the upstream's command
// changed, as the admin API writes one for sold-out and restock
// (httpapi's setStock): the queue, the command, units left (nil: not
// known) and whether it is sold out.
func (g *Gateway) logStockChanged(ctx context.Context, q, command string, st queue.Stock) {
	if !g.stock.changed(q, st, time.Now()) {
		return
	}
	var units any
	if st.Known {
		units = st.Units
	}
	g.o.Logger.LogAttrs(ctx, slog.LevelInfo, "queue stock changed", slog.String("queue", q), slog.String("command", command),
		slog.Any("unitsLeft", units), slog.Bool("soldOut", st.SoldOut()), slog.String("via", CommandHeader))
}
