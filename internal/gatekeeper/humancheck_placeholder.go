package gatekeeper

// PLACEHOLDER (branch i51-gate): the human check as the gate calls it,
// until the human-check engineer's gatekeeper/humancheck.go (with Options
// field Human *humancheck.Checker) lands. Delete this file at that merge.

import (
	"context"
	"errors"
	"net/netip"
)

// ErrHumanCheckRequired: this line asks for a human check's token (403
// human_check_required).
var ErrHumanCheckRequired = errors.New("this line asks for a human check: send its token in X-Human-Check-Token")

// humanCheck asks the provider about token: suspect when it refuses it.
// The placeholder refuses nothing.
func (g *Gatekeeper) humanCheck(ctx context.Context, token string, addr netip.Addr) (suspect bool, err error) {
	return false, nil
}
