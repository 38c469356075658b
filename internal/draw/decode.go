package draw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// DecodeRecord reads a record's JSON. A value of the wrong JSON type (a
// ticket that is true or 5.0, an id that is not a string) is answered as
// a *Mismatch naming the entry as Verify names them ("tickets[3]": the
// value as written, what it must be), so that both verifiers say the same
// of it: examples/verify-draw checks the same kinds in the same order.
// Anything else Go's JSON refuses is its error.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(b, &r)
	if err != nil {
		if m := misTyped(b); m != nil {
			return Record{}, m
		}
		return Record{}, err
	}
	return r, nil
}

// recordFields are a record's JSON fields in Record's order, with the kind
// of value each takes (see kindOK).
var recordFields = []struct{ name, kind string }{
	{"version", "int"}, {"queue", "string"}, {"commitment", "string"}, {"opensAtMs", "int"}, {"opensAt", "time"},
	{"seed", "string"}, {"beacon", "beacon"}, {"participants", "strings"}, {"participantsHash", "string"},
	{"finalSeed", "string"}, {"order", "strings"}, {"firstTicket", "int"}, {"tickets", "ints"}, {"drawnAt", "time"},
}

// misTyped is the first field of the record's JSON b, or element of one of
// its lists, that its Go type does not take (null is taken: it leaves the
// zero value), or nil.
func misTyped(b []byte) *Mismatch {
	if !json.Valid(b) {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return &Mismatch{"record", shown(b), "an object"}
	}
	for _, f := range recordFields {
		raw, ok := fields[f.name]
		if !ok || string(raw) == "null" {
			continue
		}
		switch f.kind {
		case "strings", "ints":
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil {
				return &Mismatch{f.name, shown(raw), "an array"}
			}
			for i, v := range list {
				if m := kindOK(fmt.Sprintf("%s[%d]", f.name, i), f.kind[:len(f.kind)-1], v); m != nil {
					return m
				}
			}
		case "beacon":
			var beacon map[string]json.RawMessage
			if json.Unmarshal(raw, &beacon) != nil {
				return &Mismatch{f.name, shown(raw), "an object"}
			}
			for _, bf := range []struct{ name, kind string }{{"url", "string"}, {"round", "uint"}, {"randomness", "string"}} {
				if v, ok := beacon[bf.name]; ok {
					if m := kindOK("beacon."+bf.name, bf.kind, v); m != nil {
						return m
					}
				}
			}
		default:
			if m := kindOK(f.name, f.kind, raw); m != nil {
				return m
			}
		}
	}
	return nil
}

// kindOK answers a *Mismatch naming entry when raw is not a value of kind:
// int (int64), uint (uint64), string, time (RFC 3339, as time.Time reads
// it).
func kindOK(entry, kind string, raw json.RawMessage) *Mismatch {
	var err error
	want := ""
	switch kind {
	case "int":
		want, err = "an integer", json.Unmarshal(raw, new(int64))
	case "uint":
		want, err = "an integer from 0", json.Unmarshal(raw, new(uint64))
	case "string":
		want, err = "a string", json.Unmarshal(raw, new(string))
	case "time":
		want, err = "an RFC 3339 time", json.Unmarshal(raw, new(time.Time))
	}
	if err != nil {
		return &Mismatch{entry, shown(raw), want}
	}
	return nil
}

// shown is a JSON value as a mismatch shows it: a string's text, a
// number as written, true or false, "an array" or "an object".
func shown(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		var s string
		json.Unmarshal(raw, &s)
		return s
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return string(raw)
}
