package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/staff"
)

// CommandHeader is what the upstream answers to tell waitroom something,
// on any answer, with any status; the gateway reads it and removes it, in
// every spelling, before the client sees it. Its commands, comma-separated:
//
//	release                         end this request's entry at once (a protected route)
//	sold-out [; queue=Q]            the queue has nothing left to sell
//	restock [; units=N] [; queue=Q] it has again: N units, or a count not known
//
// The queue is Q, else the protected route's the request took, else the
// one queue the routes name.
const CommandHeader = "X-Waitroom-Command"

// command reads and removes the upstream's CommandHeader from every
// response it forwards and carries out its commands before the answer goes
// on (the proxy calls it before it copies a byte of the answer to the
// client): a client that has read any of an answer carrying "release" can
// no longer use the entry it released, and one told of "sold-out" finds the
// queue sold out. u is the entry the request was a use of (nil: none).
func (g *Gateway) command(resp *http.Response, u *entryUse) error {
	for k, vs := range resp.Header {
		if !sameHeader(k, CommandHeader) {
			continue
		}
		for _, v := range vs {
			for c := range strings.SplitSeq(v, ",") {
				g.run(resp.Request.Context(), parseCommand(c), u)
			}
		}
		delete(resp.Header, k)
	}
	return nil
}

// upstreamCommand is one command of CommandHeader.
type upstreamCommand struct {
	name, queue string
	units       int64
	hasUnits    bool
	bad         string // why it cannot be carried out
}

// parseCommand reads "name; key=value; …".
func parseCommand(s string) upstreamCommand {
	parts := strings.Split(s, ";")
	c := upstreamCommand{name: strings.ToLower(strings.TrimSpace(parts[0]))}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v); k {
		case "queue":
			c.queue = v
		case "units":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				c.bad = fmt.Sprintf("units=%q: want a whole number, 0 or more", v)
			}
			c.units, c.hasUnits = n, true
		default:
			c.bad = fmt.Sprintf("unknown parameter %q", k)
		}
	}
	return c
}

// run carries out one upstream command; u is the entry of the request it
// answered (nil: an unprotected route, or no entry). A command that cannot
// be carried out is logged: the answer goes on.
func (g *Gateway) run(ctx context.Context, c upstreamCommand, u *entryUse) {
	if c.name == "" {
		return
	}
	if c.name == "release" {
		if u == nil {
			return
		}
		// The in-flight lock of the use under way stays its own: the
		// use ends as it would have, with nothing left to spend.
		if err := g.o.Guard.Release(context.WithoutCancel(ctx), u.token); err != nil {
			// The entry stays until it expires: the store is down.
			g.o.Logger.Warn("gateway: the upstream's release of an entry failed", "queue", u.token.Queue, "err", err)
		}
		return
	}
	q := c.queue
	if q == "" && u != nil {
		q = u.token.Queue
	}
	if q == "" {
		q = g.onlyQueue()
	}
	var st queue.Stock
	switch {
	case c.bad != "":
	case c.name == "sold-out" && !c.hasUnits:
		st = queue.Stock{Known: true}
	case c.name == "restock" && c.hasUnits:
		st = queue.Stock{Known: true, Units: c.units}
	case c.name == "restock":
		st = queue.Stock{}
	default:
		c.bad = "unknown command"
	}
	if c.bad == "" && q == "" {
		c.bad = "no queue: name one with ; queue=NAME (the request took no protected route, and the routes name several queues)"
	}
	if c.bad != "" {
		g.o.Logger.Warn("gateway: the upstream's "+CommandHeader+" cannot be carried out", "command", c.name, "why", c.bad)
		return
	}
	ctx = context.WithoutCancel(ctx)
	// Every command names its actor, a repeat too: the stock may have
	// changed since this gateway last told it (an operator's restock
	// between two sold-outs), and the operator's call records the command
	// only when the queue's stock was not that already (at the cost of a
	// read before each command).
	ctx = staff.WithActor(staff.WithOp(ctx, c.name), staff.Actor{Kind: staff.KindBackend})
	now, err := g.o.Operate.SetStock(ctx, q, st, false)
	if err != nil {
		g.o.Logger.Warn("gateway: the upstream's "+CommandHeader+" failed", "command", c.name, "queue", q, "err", err)
		return
	}
	g.logStockChanged(ctx, q, c.name, now)
}

// onlyQueue is the one queue the protected routes name, or "" when they
// name several (or none).
func (g *Gateway) onlyQueue() string {
	only := ""
	for _, rt := range g.o.Routes {
		if only != "" && rt.Queue != only {
			return ""
		}
		only = rt.Queue
	}
	return only
}
