package fairness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// faults injects the kind's faults into a history while the crowd runs,
// each at a fraction of the history's length, and returns when the crowd
// stops (ctx). Every fault is undone before the end: the last part of a
// history shows the system recovered.
func (r *recorder) faults(ctx context.Context, kind string) error {
	d := r.c.o.length(kind)
	at := func(f float64) bool { return sleep(ctx, time.Until(r.start.Add(time.Duration(f*float64(d))))) }
	var plan []func(context.Context) error
	switch kind {
	case "none", "no-show":
	case "embedded", "clock":
		plan = []func(context.Context) error{r.stepClock(45 * time.Second), r.stepClock(-90 * time.Second)}
	case "network":
		plan = []func(context.Context) error{r.stall, r.delay, r.stall, r.cut}
	case "instance-kill":
		plan = []func(context.Context) error{r.killInstance}
	case "drain":
		plan = []func(context.Context) error{r.drain}
	case "redis-kill":
		plan = []func(context.Context) error{r.killRedis}
	case "mixed":
		all := []func(context.Context) error{r.delay, r.stall, r.cut, r.killInstance, r.drain, r.stepClock(30 * time.Second), r.killRedis}
		rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		plan = all[:3]
	default:
		return fmt.Errorf("unknown fault kind %q", kind)
	}
	for i, f := range plan {
		if !at(0.2 + 0.55*float64(i)/float64(len(plan))) {
			break
		}
		if err := f(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// someInstance picks the instance a fault hits.
func (r *recorder) someInstance() *instance { return r.c.insts[rand.IntN(len(r.c.insts))] }

// stepClock steps one instance's wall clock by d.
func (r *recorder) stepClock(d time.Duration) func(context.Context) error {
	return func(context.Context) error {
		in := r.someInstance()
		in.clock.step(d)
		r.fault(fmt.Sprintf("instance %d's clock stepped %+v", in.n, d))
		return nil
	}
}

// delay slows every instance's Redis traffic by 20-60 ms a chunk for half
// a second.
func (r *recorder) delay(ctx context.Context) error {
	d := time.Duration(20+rand.IntN(40)) * time.Millisecond
	r.fault(fmt.Sprintf("Redis traffic of every instance delayed %v a chunk", d))
	for _, in := range r.c.insts {
		in.back.setDelay(d)
	}
	sleep(ctx, 500*time.Millisecond)
	for _, in := range r.c.insts {
		in.back.setDelay(0)
	}
	return nil
}

// stall holds the replies Redis sends every instance past go-redis's read
// timeout, so that each sends its commands again on a new connection.
func (r *recorder) stall(context.Context) error {
	d := 3 * redisReadTimeout
	r.fault(fmt.Sprintf("Redis replies to every instance stalled %v (read timeout %v)", d, redisReadTimeout))
	var wg sync.WaitGroup
	for _, in := range r.c.insts {
		wg.Go(func() { in.back.stall(d) })
	}
	wg.Wait()
	return nil
}

// cut resets every Redis connection of one instance.
func (r *recorder) cut(context.Context) error {
	in := r.someInstance()
	r.fault(fmt.Sprintf("instance %d's Redis connections cut", in.n))
	r.mu.Lock()
	r.h.Cuts = append(r.h.Cuts, r.now())
	r.mu.Unlock()
	in.back.cut()
	return nil
}

// killInstance kills one instance and starts it again half a second later.
func (r *recorder) killInstance(ctx context.Context) error {
	in := r.someInstance()
	r.fault(fmt.Sprintf("instance %d killed", in.n))
	r.c.kill(in)
	sleep(ctx, 500*time.Millisecond)
	if err := r.c.restart(context.WithoutCancel(ctx), in); err != nil {
		return fmt.Errorf("restarting instance %d: %w", in.n, err)
	}
	r.fault(fmt.Sprintf("instance %d started again", in.n))
	return nil
}

// drain sends one instance through SIGTERM's shutdown (app.Main.Close)
// and starts it again.
func (r *recorder) drain(ctx context.Context) error {
	in := r.someInstance()
	r.fault(fmt.Sprintf("instance %d drained (SIGTERM)", in.n))
	r.c.drain(in)
	r.fault(fmt.Sprintf("instance %d shut down", in.n))
	sleep(ctx, 200*time.Millisecond)
	if err := r.c.restart(context.WithoutCancel(ctx), in); err != nil {
		return fmt.Errorf("restarting instance %d: %w", in.n, err)
	}
	r.fault(fmt.Sprintf("instance %d started again", in.n))
	return nil
}

// killRedis kills Redis (-9) and starts it again from its AOF; before the
// instances may reach it again, what it kept is read for the check.
func (r *recorder) killRedis(ctx context.Context) error {
	for _, in := range r.c.insts {
		in.back.setDown(true)
	}
	killed := r.now()
	r.c.redis.Kill()
	r.fault("Redis killed (-9)")
	sleep(ctx, time.Duration(300+rand.IntN(500))*time.Millisecond)
	bg := context.WithoutCancel(ctx)
	if err := r.c.redis.Start(bg); err != nil {
		return err
	}
	kept, err := r.c.kept(bg, r.h.Specs)
	if err != nil {
		return fmt.Errorf("reading what Redis kept: %w", err)
	}
	r.mu.Lock()
	r.h.Restarts = append(r.h.Restarts, restart{Killed: killed, Reopened: r.now(), kept: kept})
	r.mu.Unlock()
	for _, in := range r.c.insts {
		in.back.setDown(false)
	}
	r.fault("Redis started again from its AOF (appendfsync everysec)")
	return nil
}
