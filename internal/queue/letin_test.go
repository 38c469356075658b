package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// TestLetStraightInIsToldOnce: under passthrough with notifyOnReady, a
// newcomer let straight in (Enter, AdmitNow) is told as let in, with their
// token's expiry and its issue (a TTL before); entering again while READY
// tells nothing more, and a queue without notifyOnReady tells nothing.
func TestLetStraightInIsToldOnce(t *testing.T) {
	ctx := context.Background()
	line := signals.New()
	var told []string
	line.Listen(signals.Listener{LetIn: func(q string, users []string, at, expires time.Time) {
		told = append(told, fmt.Sprint(q, users, expires.Sub(at)))
	}})
	svc := queue.NewService(memstore.New(nil), 0, line)
	for _, q := range []string{"told", "silent"} {
		c := queue.DefaultConfig()
		c.Method, c.NotifyOnReady = queue.MethodPassthrough, q == "told"
		if err := svc.PutConfig(ctx, q, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []func() (queue.View, error){
		func() (queue.View, error) { return svc.Enter(ctx, "told", "alice") },
		func() (queue.View, error) { return svc.Enter(ctx, "told", "alice") }, // READY already
		func() (queue.View, error) { return svc.AdmitNow(ctx, "told", "bob") },
		func() (queue.View, error) { return svc.AdmitNow(ctx, "told", "bob") },
		func() (queue.View, error) { return svc.Enter(ctx, "silent", "carol") },
	} {
		if v, err := step(); err != nil || v.State != queue.Ready {
			t.Fatalf("%+v, %v: want READY", v, err)
		}
	}
	ttl := queue.DefaultConfig().TokenTTL
	if want := []string{fmt.Sprint("told", []string{"alice"}, ttl), fmt.Sprint("told", []string{"bob"}, ttl)}; !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
