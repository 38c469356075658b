// Package lane is a queue's lanes (issue 53): the crowds one sale serves
// each in its own way — members, code holders, the public — each with its
// own ordered line and a share of admission. It says what a lane is, who
// belongs to it, and how one tick's seats are split among the lanes that
// have people waiting (Allot). The stores keep the lines; package
// admission plans each tick with Allot; package queue carries the lanes
// as a setting.
//
// One ticket counter serves every lane, so arrival order is comparable
// across lanes; a person's position is their rank within their own lane,
// so nobody's position rises because someone joined another lane, or
// because the shares changed.
package lane

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Public is the lane of whoever belongs to no other lane. A queue without
// lanes is one lane, Public, with the whole rate.
const Public = "public"

// MaxLanes bounds a queue's lanes, Public among them.
const MaxLanes = 8

// ErrInvalid: a list of lanes the queue cannot take; the message says why.
var ErrInvalid = errors.New("invalid lanes")

// Lane is one of a queue's lanes.
type Lane struct {
	// Name names it to people and operators: 1–32 of a-z, 0-9 and '-'.
	Name string `json:"name"`
	// Claim, "name=value", puts a signed-in user whose JWT claim name
	// holds value (a string equal to it, or a list of strings containing
	// it) in this lane. "" for none.
	Claim string `json:"claim,omitempty"`
	// Codes: holders of this lane's access codes belong to it.
	Codes bool `json:"codes,omitempty"`
	// Share is the lane's share of admission, 0 to 1; a queue's shares sum
	// to 1. A lane with share 0 is let in only from seats the others leave
	// (a phase's members-only step gives the public 0).
	Share float64 `json:"share"`
}

// List is a queue's lanes in the order a person is matched against them
// (the first lane whose claim matches is theirs).
type List []Lane

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// shareSlack is how far from 1 the shares may sum, for decimal fractions
// such as 0.1 + 0.2 that binary floats cannot hold exactly.
const shareSlack = 1e-6

// Validate checks l: empty (one lane, Public), or at most MaxLanes lanes
// with distinct valid names, Public among them with neither claim nor
// codes (whoever belongs nowhere else is in it), every other lane reached
// by a claim or codes, and shares between 0 and 1 that sum to 1.
func (l List) Validate() error {
	if len(l) == 0 {
		return nil
	}
	if len(l) > MaxLanes {
		return fmt.Errorf("%w: %d lanes, at most %d", ErrInvalid, len(l), MaxLanes)
	}
	seen, sum := map[string]bool{}, 0.0
	for _, ln := range l {
		if err := ln.validate(); err != nil {
			return err
		}
		if seen[ln.Name] {
			return fmt.Errorf("%w: lane %q named twice", ErrInvalid, ln.Name)
		}
		seen[ln.Name] = true
		sum += ln.Share
	}
	if !seen[Public] {
		return fmt.Errorf("%w: no lane is %q, the lane of whoever belongs to no other", ErrInvalid, Public)
	}
	if math.Abs(sum-1) > shareSlack {
		return fmt.Errorf("%w: the shares sum to %v, not 1", ErrInvalid, sum)
	}
	return nil
}

func (ln Lane) validate() error {
	switch {
	case !namePattern.MatchString(ln.Name):
		return fmt.Errorf("%w: lane name %q must be 1-32 of a-z, 0-9 and '-'", ErrInvalid, ln.Name)
	case math.IsNaN(ln.Share) || ln.Share < 0 || ln.Share > 1:
		return fmt.Errorf("%w: lane %q's share %v is not between 0 and 1", ErrInvalid, ln.Name, ln.Share)
	case ln.Name == Public && (ln.Claim != "" || ln.Codes):
		return fmt.Errorf("%w: lane %q is whoever belongs to no other lane: it takes neither a claim nor codes", ErrInvalid, Public)
	case ln.Name != Public && ln.Claim == "" && !ln.Codes:
		return fmt.Errorf("%w: lane %q has no way in: give it a claim (\"tier=gold\") or codes", ErrInvalid, ln.Name)
	}
	if ln.Claim != "" {
		if name, value, ok := strings.Cut(ln.Claim, "="); !ok || name == "" || value == "" {
			return fmt.Errorf("%w: lane %q's claim %q must be name=value", ErrInvalid, ln.Name, ln.Claim)
		}
	}
	return nil
}

// Named returns the lane called name. Without lanes, Public is the one
// lane, with the whole share.
func (l List) Named(name string) (Lane, bool) {
	if len(l) == 0 {
		return Lane{Name: Public, Share: 1}, name == Public
	}
	for _, ln := range l {
		if ln.Name == name {
			return ln, true
		}
	}
	return Lane{}, false
}

// Share is the configured share of the lane called name (0 for a lane
// not in l: its people are let in only from seats the others leave).
func (l List) Share(name string) float64 {
	ln, _ := l.Named(name)
	return ln.Share
}

// ByClaims is the lane a signed-in user's claims put them in: the first
// lane in l whose claim they hold, else Public. claim reads one claim of
// the user's token (nil: no such claim).
func (l List) ByClaims(claim func(name string) any) string {
	for _, ln := range l {
		name, value, ok := strings.Cut(ln.Claim, "=")
		if !ok || claim == nil {
			continue
		}
		if holds(claim(name), value) {
			return ln.Name
		}
	}
	return Public
}

// holds says whether a JWT claim's value v is value, or a list holding it.
func holds(v any, value string) bool {
	switch v := v.(type) {
	case string:
		return v == value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	case []string:
		for _, s := range v {
			if s == value {
				return true
			}
		}
	}
	return false
}

// Parse reads a list of lanes from its JSON (null or empty: none), fields
// checked strictly; Validate checks it whole.
func Parse(raw []byte) (List, error) {
	var l List
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%w: lanes must be a list of {name, claim, codes, share}: %v", ErrInvalid, err)
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

// JSON is l as Parse reads it ("[]" for none).
func (l List) JSON() string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l) // a list of plain structs always marshals
	return string(b)
}

// Join is how a person asks for a place: in Lane (their claims' lane;
// "" or Public: the public), or by redeeming an access code, whose hash is
// Code (accesscode.Hash; the code's lane then decides), or by claiming
// the place another session carried here, whose handoff code's hash is
// Handoff (handoff.Hash, issue 55: queue.Store.ClaimHandoff; the place
// keeps its lane, and Lane and Code are not read). The claim rides here,
// not in a method of its own, because package queue's exports are capped.
type Join struct {
	Lane    string
	Code    string
	Handoff string
}

// Stats is one lane's figures, as a store's stats show them.
type Stats struct {
	Name string
	// Share is its configured share in force; Length how many wait in it;
	// Admitted how many it let in over the queue's life.
	Share    float64
	Length   int64
	Admitted int64
	// Redeemed counts its access codes' redemptions, CodesLeft the
	// redemptions its codes were given less those, expired codes still
	// counted (two counts kept, not a scan of every code).
	Redeemed, CodesLeft int64
}
