package app_test

import (
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestSuspectRangesOnSIGHUP: with --suspect-ranges and no --queues, SIGHUP
// reads the ranges again rather than end the process: a new range marks
// the places taken from then on (here refused: suspects refuse), nobody's
// place already taken is dropped, and a file that cannot be read is
// logged with the old ranges kept in force.
func TestSuspectRangesOnSIGHUP(t *testing.T) {
	bin := buildWaitroom(t)
	file := filepath.Join(t.TempDir(), "ranges.txt")
	writeFile(t, file, "# a documentation range: nobody here\n192.0.2.0/24\n")
	p := startBinary(t, bin, "--suspect-ranges", file)
	in := p.client(t)
	p.wantLog(t, `msg="suspect address ranges".* ranges=1`)
	if r := in.PatchQueue("default", map[string]any{"suspects": "refuse", "paused": true}); r.Status != 200 {
		t.Fatalf("suspects refuse: %d %s", r.Status, r.Raw)
	}
	enter := func(user string) (int, string) {
		r := in.Do("POST", "/api/v1/queues/default/entries", in.As(user), nil)
		return r.Status, r.ErrorCode()
	}
	if status, code := enter("alice"); status != 200 {
		t.Fatalf("alice, from an address in no range: %d %s", status, code)
	}

	// The test's own address joins the ranges.
	writeFile(t, file, "192.0.2.0/24\n127.0.0.0/8\n::1/128\n")
	hangUpRanges(t, p, 1)
	p.wantLog(t, `msg="the suspect ranges were read again".* ranges=3`)
	if status, code := enter("bob"); status != 403 || code != "suspected_bot" {
		t.Errorf("bob, from a range read on SIGHUP: %d %s, want 403 suspected_bot", status, code)
	}
	if r := in.Do("GET", "/api/v1/queues/default/entries/me", in.As("alice"), nil); r.Status != 200 || r.Num("position") != 1 {
		t.Errorf("alice after SIGHUP: %d %s, want still first in line", r.Status, r.Raw)
	}
	if status, _ := enter("alice"); status != 200 {
		t.Errorf("alice entering again: %d, want her place (judged once, when taken)", status)
	}

	// A file that cannot be read: logged, the old ranges kept.
	writeFile(t, file, "127.0.0.0/8\nnot a range\n")
	hangUpRanges(t, p, 2)
	p.wantLog(t, `msg="the suspect ranges were not read again: the old ones stay in force".* ranges=3`)
	if status, code := enter("carol"); status != 403 || code != "suspected_bot" {
		t.Errorf("carol after a bad file: %d %s, want 403 suspected_bot (the old ranges)", status, code)
	}
	p.stop(t)
}

// hangUpRanges sends SIGHUP and waits for the n-th answer to one about
// the suspect ranges in the log.
func hangUpRanges(t *testing.T, p *binaryProcess, n int) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	answered := regexp.MustCompile(`msg="the suspect ranges were (read again|not read again)`)
	deadline := time.Now().Add(apptest.Patience)
	for len(answered.FindAllString(p.logs.String(), -1)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to SIGHUP %d within %v:\n%s", n, apptest.Patience, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
