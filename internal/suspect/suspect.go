// Package suspect holds the signals that mark a client as a likely bot
// (issue 51), each judged once, in the instance, when a place is taken:
// the address is in a suspect range (Ranges: data-centre and cloud lists),
// or the session has polled much faster than it was told to (PollRate).
// The edge's bot score and the human check are read where the request is
// (package gatekeeper, package humancheck); their names are here, so that
// every signal is counted and kept under one name.
package suspect

// Signal names one reason to suspect a client, as metrics, logs, the
// admin list and the report show it.
type Signal string

const (
	// EdgeScore: the edge (a trusted proxy) scored the request below the
	// threshold (--bot-score-header, --bot-score-below).
	EdgeScore Signal = "edge_score"
	// AddressRange: the client's address is in a --suspect-ranges file.
	AddressRange Signal = "address_range"
	// HumanCheck: the human-check provider refused the token sent.
	HumanCheck Signal = "human_check"
	// PollRate: the session polled much faster than its pollAfterSeconds.
	PollRate Signal = "poll_rate"
)
