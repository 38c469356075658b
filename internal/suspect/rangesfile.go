package suspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// readRangesFile adds one --suspect-ranges file's prefixes to b. The shape
// decides the format, so an operator points the flag at a download as it
// is: a JSON object is one of the cloud lists, anything else is plain CIDRs.
func readRangesFile(path string, b *setBuilder) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("suspect ranges: %w", err)
	}
	// A byte-order mark (Windows editors write one) is no part of either.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		err = readCloudJSON(data, b)
	} else {
		err = readPlain(data, b)
	}
	var at *atError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &at) && at.line > 0:
		return fmt.Errorf("suspect ranges: %s:%d: %w", path, at.line, at.err)
	case errors.As(err, &at):
		return fmt.Errorf("suspect ranges: %s: %s: %w", path, at.path, at.err)
	}
	return fmt.Errorf("suspect ranges: %s: %w", path, err)
}

// atError places a file's fault: a line, or the JSON path of an entry.
type atError struct {
	line int
	path string
	err  error
}

func (e *atError) Error() string { return e.err.Error() }
func (e *atError) Unwrap() error { return e.err }

// readPlain reads one CIDR or bare address a line (a bare address is its
// own /32 or /128); `#` starts a comment, blank lines are skipped. An
// error starts with the line number (file:line: ...).
func readPlain(data []byte, b *setBuilder) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		p, err := parseRange(text)
		if err != nil {
			return &atError{line: line, err: err}
		}
		b.add(p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return nil
}

// parseRange reads a CIDR, or a bare address as the prefix of that one
// address.
func parseRange(text string) (netip.Prefix, error) {
	if strings.Contains(text, "/") {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR", text)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(text)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an address", text)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// cloudList holds the fields of the three published cloud formats that
// carry prefixes; pointers tell a key that is absent from an empty list.
//   - AWS ip-ranges.json: prefixes[].ip_prefix, ipv6_prefixes[].ipv6_prefix
//   - Google cloud.json (and goog.json): prefixes[].ipv4Prefix or .ipv6Prefix
//   - Azure service tags: values[].properties.addressPrefixes[] (both families)
type cloudList struct {
	Prefixes *[]struct {
		AWS    string `json:"ip_prefix"`
		Google string `json:"ipv4Prefix"`
		V6     string `json:"ipv6Prefix"`
	} `json:"prefixes"`
	IPv6Prefixes *[]struct {
		AWS string `json:"ipv6_prefix"`
	} `json:"ipv6_prefixes"`
	Values *[]struct {
		Properties struct {
			AddressPrefixes []string `json:"addressPrefixes"`
		} `json:"properties"`
	} `json:"values"`
}

// readCloudJSON reads AWS's, Google's or Azure's published list. An error
// starts with the line (for a JSON that does not parse) or the JSON path
// of the entry at fault.
func readCloudJSON(data []byte, b *setBuilder) error {
	var list cloudList
	if err := json.Unmarshal(data, &list); err != nil {
		return jsonError(data, err)
	}
	if list.Prefixes == nil && list.IPv6Prefixes == nil && list.Values == nil {
		return errors.New("a JSON object of no known shape: want AWS ip-ranges.json (prefixes, ipv6_prefixes), Google cloud.json (prefixes) or Azure service tags (values)")
	}
	add := func(path, text string) error {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return &atError{path: path, err: fmt.Errorf("%q is not a CIDR", text)}
		}
		b.add(p)
		return nil
	}
	for i, e := range deref(list.Prefixes) {
		var err error
		switch {
		case e.AWS != "":
			err = add(fmt.Sprintf("prefixes[%d].ip_prefix", i), e.AWS)
		case e.Google != "":
			err = add(fmt.Sprintf("prefixes[%d].ipv4Prefix", i), e.Google)
		case e.V6 != "":
			err = add(fmt.Sprintf("prefixes[%d].ipv6Prefix", i), e.V6)
		default:
			err = &atError{path: fmt.Sprintf("prefixes[%d]", i), err: errors.New("none of ip_prefix, ipv4Prefix, ipv6Prefix")}
		}
		if err != nil {
			return err
		}
	}
	for i, e := range deref(list.IPv6Prefixes) {
		if err := add(fmt.Sprintf("ipv6_prefixes[%d].ipv6_prefix", i), e.AWS); err != nil {
			return err
		}
	}
	for i, v := range deref(list.Values) {
		for j, text := range v.Properties.AddressPrefixes {
			if err := add(fmt.Sprintf("values[%d].properties.addressPrefixes[%d]", i, j), text); err != nil {
				return err
			}
		}
	}
	return nil
}

func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

// jsonError turns a decoding error's byte offset into the line an operator
// opens the file at.
func jsonError(data []byte, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return &atError{line: lineAt(data, syntax.Offset), err: err}
	case errors.As(err, &typ):
		return &atError{line: lineAt(data, typ.Offset), err: err}
	}
	return err
}

func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte{'\n'})
}
