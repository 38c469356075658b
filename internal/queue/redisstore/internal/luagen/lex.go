package main

import (
	"regexp"
	"strings"
)

// Only code is rewritten: a name in a comment or a string is the reader's
// or the data's, not the dialect's. The dialect's Lua has line comments
// (--) and quoted strings ('' and ""), no long brackets ([[ ]]): lexing
// that much tells them apart.

// mask is text with each comment, and with strs each string too, turned
// to spaces: the same length, so a place found in it is that place in text.
func mask(text string, strs bool) string {
	out := []byte(text)
	blank := func(from, to int) {
		for j := from; j < to; j++ {
			out[j] = ' '
		}
	}
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "--"):
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			blank(i, i+end)
			i += end
		case text[i] == '\'' || text[i] == '"':
			end := stringEnd(text, i)
			if strs {
				blank(i, end)
			}
			i = end
		default:
			i++
		}
	}
	return string(out)
}

// stringEnd is where the string opening at text[i] ends (after its
// closing quote, or at the line's end if it has none).
func stringEnd(text string, i int) int {
	quote := text[i]
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case quote:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(text)
}

// codeOf is text's code alone: comments and strings read as spaces.
func codeOf(text string) string { return mask(text, true) }

// replaceCode replaces each match of re in text's code (with strs, strings
// are not code) by what f makes of its submatches.
func replaceCode(text string, re *regexp.Regexp, strs bool, f func(m []string) string) string {
	var out strings.Builder
	last := 0
	for _, at := range re.FindAllStringSubmatchIndex(mask(text, strs), -1) {
		m := make([]string, len(at)/2)
		for k := range m {
			if at[2*k] >= 0 {
				m[k] = text[at[2*k]:at[2*k+1]]
			}
		}
		out.WriteString(text[last:at[0]])
		out.WriteString(f(m))
		last = at[1]
	}
	out.WriteString(text[last:])
	return out.String()
}

// linesOfCode counts text's lines that hold code: not blank, not only a comment.
func linesOfCode(text string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			n++
		}
	}
	return n
}
