package suspect

import "time"

// Action is what becomes of a place a signal marks as a likely bot: a
// queue's `suspects` setting.
type Action string

const (
	// Shadow: the place is kept in the shadow line, answered as a
	// person's is, and let in only as the queue's Admits says.
	Shadow Action = "shadow"
	// Challenge: the suspect solves a proof of work at the queue's
	// suspects' cost, then takes a place in the real line.
	Challenge Action = "challenge"
	// Refuse: 403 suspected_bot.
	Refuse Action = "refuse"
	// Allow: the suspect is counted and logged, and takes a place in the
	// real line.
	Allow Action = "allow"
)

// Admits says whether a queue's shadow line is ever let in: its
// `shadowAdmits` setting.
type Admits string

const (
	// AdmitNever: nobody in the shadow line is let in (the default).
	AdmitNever Admits = "never"
	// AdmitLast: the shadow line is let in, in its order and at the
	// queue's rate, while nobody waits in the real line.
	AdmitLast Admits = "last"
)

// Mark is what a suspect's place keeps of why it is one: the signals that
// marked it (their names) and its address as a keyed hash, never in clear.
type Mark struct {
	Signals []string
	Address string
}

// Place is one place in the shadow line, as an operator lists it.
type Place struct {
	// Ticket is its number in the shadow line: the id an operator clears
	// it by.
	Ticket int64
	// Behind is the real line's last ticket when it arrived: a person
	// arriving then would have stood just behind it.
	Behind int64
	Joined time.Time
	Mark
}
