package gatekeeper

// PLACEHOLDER (branch i51-gate): the human check as the gate calls it,
// with branch i51-human's signature, until its gatekeeper/humancheck.go
// (with Options field Human *humancheck.Checker) lands. Delete this file
// at that merge, and i51-human's enterChecked and ErrSuspectedBot with it.

import (
	"context"
	"errors"
	"net/netip"
)

// ErrHumanCheckRequired: this line asks for a human check's token (403
// human_check_required).
var ErrHumanCheckRequired = errors.New("this line asks for a human check: send its token in X-Human-Check-Token")

// humanCheck asks the provider about token, spent once in queue q:
// suspect when it refuses it; ErrHumanCheckRequired (with what the page
// needs) when there is none. The placeholder refuses nothing.
func (g *Gatekeeper) humanCheck(ctx context.Context, q, token string, addr netip.Addr) (suspect bool, err error) {
	if token == "" {
		return false, ErrHumanCheckRequired
	}
	return false, nil
}
