package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestOneHashNoFieldTwice: the config and the admission state share the
// queue's hash (keys.go), so no admission field may take a setting's name.
// The admission fields are those Go names (tickFields, paceFields), every
// field a script reads as adm.x, and every quoted name on a script's line
// that writes the hash (put_config.lua writes settings too, as it should):
// a new one that collides with a setting fails here.
func TestOneHashNoFieldTwice(t *testing.T) {
	settings := append(slices.Clone(settingFields), "epoch")
	adm := append(slices.Clone(tickFields), paceFields...)
	files, err := filepath.Glob("scripts/*.lua")
	if err != nil || len(files) < 10 {
		t.Fatalf("the scripts: %v, %v", files, err)
	}
	quoted := regexp.MustCompile(`'(\w+)'`)
	writes := regexp.MustCompile(`redis\.call\('(HSET|HSETNX|HINCRBY|HDEL)', K\.cfg\b`)
	admRead := regexp.MustCompile(`\badm\.(\w+)`)
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(code), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			for _, m := range admRead.FindAllStringSubmatch(line, -1) {
				adm = append(adm, m[1])
			}
			if !writes.MatchString(line) {
				continue
			}
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				if filepath.Base(f) != "put_config.lua" || !slices.Contains(settings, m[1]) {
					adm = append(adm, m[1])
				}
			}
		}
	}
	adm = slices.DeleteFunc(adm, func(f string) bool { return strings.ToUpper(f) == f }) // HSET and the like
	if n := len(slices.Compact(slices.Sorted(slices.Values(adm)))); n < 30 {
		t.Fatalf("found %d admission fields, fewer than the layout's (docs/operations.md): the search is broken", n)
	}
	for _, f := range adm {
		if slices.Contains(settings, f) {
			t.Errorf("admission field %q is also a setting's field: they share the queue's hash", f)
		}
	}
}

// TestUpgradeFoldsTheOldAdmissionHash: a queue as an earlier version left
// it, its admission state in {queue}:adm, carries on after Upgrade: its
// counters and its next tick are in the queue's hash, a field this
// version wrote first is kept, and the old hash is gone. A second Upgrade
// changes nothing.
func TestUpgradeFoldsTheOldAdmissionHash(t *testing.T) {
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("wrup%d:", rand.Int64())
	st := New(rdb, prefix)
	if err := st.PutConfig(ctx, "q", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	k := keysFor(prefix, "q")
	old := prefix + "{q}:adm"
	if err := rdb.HSet(ctx, old, "admitted", 7, "consumed", 3, "next", 111, "open_state", "open").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k[kCfg], "next", 222).Err(); err != nil { // this version ticked first
		t.Fatal(err)
	}
	if n, err := st.Upgrade(ctx); err != nil || n != 1 {
		t.Fatalf("Upgrade: %d queues, %v; want 1", n, err)
	}
	got, err := rdb.HMGet(ctx, k[kCfg], "admitted", "consumed", "next", "open_state").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"7", "3", "222", "open"}; !slices.Equal(got, want) {
		t.Errorf("after Upgrade the queue's hash holds %v, want %v", got, want)
	}
	if n, _ := rdb.Exists(ctx, old).Result(); n != 0 {
		t.Errorf("the old admission hash is still there")
	}
	s, err := st.Stats(ctx, "q")
	if err != nil || s.AdmittedTotal != 7 || s.ConsumedTotal != 3 {
		t.Errorf("stats after Upgrade: %+v, %v; want admitted 7, consumed 3", s, err)
	}
	if n, err := st.Upgrade(ctx); err != nil || n != 0 {
		t.Errorf("a second Upgrade: %d queues, %v; want 0", n, err)
	}
}

// TestOpeningKeepsThePreQueueAsItClosed: open_due.lua copies the pre-queue
// into K.closed at the close and answers it while the opening is placed,
// leavers included; place.lua deletes it when the opening is done. An
// opening an older version closed has no K.closed: the pre-queue as it is.
func TestOpeningKeepsThePreQueueAsItClosed(t *testing.T) {
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	st := New(rdb, fmt.Sprintf("wrclosed%d:", rand.Int64()))
	c := queue.DefaultConfig()
	c.OpensAt = time.Now().Add(-time.Minute)
	due := func(q, want string) queue.Opening {
		t.Helper()
		o, err := st.OpenDue(ctx, q, "A", time.Minute)
		if err != nil || !o.Due || fmt.Sprint(o.Pending) != want {
			t.Fatalf("OpenDue of %s: %+v, %v; want due with %s", q, o, err, want)
		}
		return o
	}
	closed := func(q string) int64 {
		t.Helper()
		n, err := rdb.Exists(ctx, keysFor(st.prefix, q)[kClosed]).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, q := range []string{"now", "older"} {
		if err := st.PutConfig(ctx, q, c); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"a", "b", "c"} {
			if _, err := st.Enter(ctx, q, u); err != nil {
				t.Fatal(err)
			}
		}
		due(q, "[a b c]")
		if _, err := st.Leave(ctx, q, "b"); err != nil {
			t.Fatal(err)
		}
	}
	o := due("now", "[a b c]")
	if done, err := st.Place(ctx, "now", "A", o.Next, []string{"c", "b"}, time.Minute); err != nil || done || closed("now") != 1 {
		t.Fatalf("placing c and b: done %v, %v, closed kept %d; want more to place, the list kept", done, err, closed("now"))
	}
	due("now", "[a b c]")
	if done, err := st.Place(ctx, "now", "A", o.Next+2, []string{"a"}, time.Minute); err != nil || !done || closed("now") != 0 {
		t.Fatalf("placing a: done %v, %v, closed kept %d; want the opening done, the list gone", done, err, closed("now"))
	}
	if err := rdb.Del(ctx, keysFor(st.prefix, "older")[kClosed]).Err(); err != nil {
		t.Fatal(err)
	}
	due("older", "[a c]")
}
