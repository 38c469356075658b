package report

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
)

// auditTable lists who changed what (the audit log's entries of the queue
// within the span), oldest first: when, who (staff.Actor.Label), what (the
// operation), and each changed field before and after.
func auditTable(es []staff.Entry, x texts, loc *time.Location) table {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b staff.Entry) int { return a.At.Compare(b.At) })
	t := table{Head: []string{x.t("colAt"), x.t("colWho"), x.t("colMoment"), x.t("colChange")}}
	for _, e := range es {
		what := e.Op
		if e.Detail != "" && e.Outcome != staff.Refused {
			what += " (" + e.Detail + ")"
		}
		t.Rows = append(t.Rows, []string{clock(e.At, loc), e.Actor.Label(), what, changesText(e, x)})
	}
	return t
}

// changesText is an entry's changes in a few words: "field: before →
// after; …", a refusal's reason and how many like it were not logged.
func changesText(e staff.Entry, x texts) string {
	var parts []string
	if e.Outcome == staff.Refused {
		parts = append(parts, x.t("auditRefused", "why", e.Detail))
		if e.Repeats > 0 {
			parts = append(parts, x.t("auditRepeats", "n", x.count(e.Repeats)))
		}
	}
	for _, c := range e.Changes {
		parts = append(parts, c.Field+": "+valueText(c.Before, x)+" → "+valueText(c.After, x))
	}
	return strings.Join(parts, "; ")
}

// valueText is a change's JSON value as written: a string as it is, null
// as none, anything else as its JSON.
func valueText(v any, x texts) string {
	switch v := v.(type) {
	case nil:
		return x.t("auditNothing")
	case string:
		if v == "" {
			return `""`
		}
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}
