// Command go-client walks the README's first session with waitroom's API
// through a Go client that oapi-codegen generates from openapi.yaml: enter
// the line, wait to be let in (the status poll held near the front with
// waitSeconds), buy with the entry token.
//
//	go generate ./...     # waitroomapi/client.gen.go, from ../../openapi.yaml
//	WAITROOM_JWT=$(go run ../../cmd/waitroom token --user alice) \
//	  go run . -base http://localhost:8080 -product tee
//
// internal/repolint's TestGeneratedGoClient generates the client, builds this
// program and runs it against a server it boots.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/waitroom/waitroom/examples/go-client/waitroomapi"
)

func main() {
	base := flag.String("base", "http://localhost:8080", "waitroom's URL (gateway mode: with its prefix, e.g. http://localhost:8080/_waitroom)")
	queue := flag.String("queue", "default", "the queue to wait in")
	product := flag.String("product", "tee", "the product to buy")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	jwt := os.Getenv("WAITROOM_JWT")
	if jwt == "" {
		fmt.Fprintln(os.Stderr, "WAITROOM_JWT: a user's JWT (waitroom token --user NAME)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *base, jwt, *queue, *product); err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, base, jwt, queue, product string) error {
	// The user's identity on every request, as a shop's login hands it out.
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+jwt)
		return nil
	}
	c, err := waitroomapi.NewClientWithResponses(base, waitroomapi.WithRequestEditorFn(bearer))
	if err != nil {
		return err
	}

	// Enter: WAITING with a place, or READY at once. The body is optional:
	// an access code (AccessCode), when the shop handed the user one.
	entered, err := c.EnterQueueWithResponse(ctx, queue, &waitroomapi.EnterQueueParams{}, waitroomapi.EnterQueueJSONRequestBody{})
	if err != nil {
		return fmt.Errorf("enter: %w", err)
	}
	if entered.JSON200 == nil {
		return fmt.Errorf("enter: %d %s", entered.StatusCode(), entered.Body)
	}
	standing, err := entered.JSON200.ValueByDiscriminator()
	if err != nil {
		return fmt.Errorf("enter: %w", err)
	}

	// Wait: near the front of a line that moves, ask at once and the server
	// holds the answer (waitSeconds) until the user is let in; further back,
	// or while the line is paused, ask again after pollAfterSeconds.
	held := 25
	for {
		switch s := standing.(type) {
		case waitroomapi.Ready:
			fmt.Printf("READY: entry token until %s\n", s.ExpiresAt.Format(time.RFC3339))
			return buy(ctx, c, product, s.Token)
		case waitroomapi.NotInQueue:
			return errors.New("NOT_IN_QUEUE: the place was lost (left, or skipped as a no-show)")
		case waitroomapi.SoldOut:
			// The place is kept for a restock; a shop would say so and ask
			// again after pollAfterSeconds. This walk-through stops here.
			return errors.New("SOLD_OUT: nothing left to sell")
		case waitroomapi.Waiting:
			fmt.Println("WAITING:", describe(s))
			if near := s.EstimatedWaitSeconds != nil && *s.EstimatedWaitSeconds <= 2 && s.Paused == nil; !near {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(s.PollAfterSeconds) * time.Second):
				}
			}
		default:
			return fmt.Errorf("an answer of no known status: %T", s)
		}
		polled, err := c.GetMyEntryWithResponse(ctx, queue, &waitroomapi.GetMyEntryParams{WaitSeconds: &held})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if polled.JSON200 == nil {
			return fmt.Errorf("status: %d %s", polled.StatusCode(), polled.Body)
		}
		if standing, err = polled.JSON200.ValueByDiscriminator(); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
}

// buy orders one of product with the entry token.
func buy(ctx context.Context, c *waitroomapi.ClientWithResponses, product, token string) error {
	res, err := c.PlaceOrderWithResponse(ctx, &waitroomapi.PlaceOrderParams{XEntryToken: token},
		waitroomapi.PlaceOrderJSONRequestBody{ProductId: product, Quantity: 1})
	if err != nil {
		return fmt.Errorf("order: %w", err)
	}
	if res.JSON201 == nil {
		return fmt.Errorf("order: %d %s", res.StatusCode(), res.Body)
	}
	o := res.JSON201
	fmt.Printf("ORDERED: order %d, %d × %s for %s\n", o.Id, o.Quantity, o.ProductId, o.UserId)
	return nil
}

func describe(w waitroomapi.Waiting) string {
	if w.OpensAt != nil {
		return "the line opens at " + w.OpensAt.Format(time.RFC3339)
	}
	if w.Position == nil || w.QueueLength == nil || w.EstimatedWaitSeconds == nil {
		return "in line"
	}
	return fmt.Sprintf("number %d of %d, about %d s", *w.Position, *w.QueueLength, *w.EstimatedWaitSeconds)
}
