package draw

// TEMPORARY (issue 57, branch i57-http): a stand-in for NewDrand, which
// another branch writes in drand.go with this exact signature, so that the
// app's --draw-beacon wiring builds here. Delete this file at the merge.

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// NewDrand is drand's HTTP API at url (a chain's base): see drand.go.
func NewDrand(url string, client *http.Client) BeaconSource { return drandStub{} }

type drandStub struct{}

var errDrandStub = errors.New("draw: the drand beacon is not built on this branch")

func (drandStub) Name(context.Context, time.Time) (Beacon, error) { return Beacon{}, errDrandStub }
func (drandStub) Read(context.Context, Beacon) (Beacon, error)    { return Beacon{}, errDrandStub }
