package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestOneHashNoFieldTwice: the config and the admission state share the
// queue's hash (keys.go), so no admission field may take a setting's name.
// The admission fields are those Go names (tickFields, paceFields) and
// every quoted name on a script's line that touches K.adm, or read as
// adm.x: a new one that collides with a setting fails here.
func TestOneHashNoFieldTwice(t *testing.T) {
	settings := append(slices.Clone(settingFields), "epoch")
	adm := append(slices.Clone(tickFields), paceFields...)
	entries, err := scriptFiles.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`'(\w+)'`)
	for _, e := range entries {
		code := mustRead(strings.TrimSuffix(e.Name(), ".lua"))
		for _, line := range strings.Split(code, "\n") {
			if strings.Contains(line, "K.adm") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
				for _, m := range quoted.FindAllStringSubmatch(line, -1) {
					adm = append(adm, m[1])
				}
			}
		}
		adm = append(adm, fieldsOf(code, "adm")...)
	}
	if len(adm) < 40 {
		t.Fatalf("found %d admission fields, fewer than the layout's (docs/operations.md): the search is broken", len(adm))
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
