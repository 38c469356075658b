package events

import (
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
)

// SuspectTally counts, on one instance, the places its gatekeeper judged
// likely bots' (issue 51) for the sale's rows: the signals that marked
// them and what was done. It adds them to the counts the Detector writes
// with each queue's reading (its Options.Pending), so they reach the
// store within a second, in the one write a queue's reading costs anyway.
// What was counted since the last write is lost if the instance crashes:
// the report then misses at most about a second of one instance's
// suspects, which is no reason to write on every place taken. The places
// put in the shadow line and cleared from it are not counted here: the
// store's totals say them (queue.Stats), exactly, whichever instance
// took them.
type SuspectTally struct {
	pending *rollup.Pending
}

// NewSuspectTally is a tally into pending: the Detector's.
func NewSuspectTally(pending *rollup.Pending) *SuspectTally {
	return &SuspectTally{pending: pending}
}

// Count is one place in queue judged a suspect's, by signals (package
// suspect's names), and the action taken: a refusal (403, or 503 in
// degraded mode) and a challenge are counted as such; a shadowed place is
// the store's to count, an allowed one is counted by its signals alone.
// A place no signal marked is not counted.
func (t *SuspectTally) Count(q string, signals []string, action suspect.Action) {
	if len(signals) == 0 {
		return
	}
	add := map[string]int64{rollup.SuspectPlaces: 1}
	for _, s := range signals {
		add[rollup.SuspectField(s)]++
	}
	switch action {
	case suspect.Refuse:
		add[rollup.RefusedSuspects] = 1
	case suspect.Challenge:
		add[rollup.ChallengedSuspects] = 1
	}
	t.pending.Add(q, add)
}
