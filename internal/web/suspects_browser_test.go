package web_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/testenv"
)

// The admin page's shadow line (issue 51): a queue's card says how many
// wait in it; opened, it lists each suspect with its signals and hashed
// address, and its button clears one into the line. The place is taken in
// the shadow line by the test itself, on the instance's Redis, as
// internal/httpapi's TestOperatorClearsASuspect does.
func TestAdminClearsASuspect(t *testing.T) {
	b := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "redis", Redis: true}, nil)
	q := apptest.UniqueID("shadowed")
	in.PutQueue(q, map[string]any{"paused": true})
	store := redisstore.New(testenv.RedisClient(t), in.KeyPrefix)
	st, err := store.EnterShadow(context.Background(), q, apptest.UniqueID("bot"),
		suspect.Mark{Signals: []string{"address_range"}, Address: "3f9a1c0e7b52d4a8"})
	if err != nil {
		t.Fatalf("a place in the shadow line: %v", err)
	}
	op := apptest.SignedInAdminAt(t, b, in, "/admin")
	card := `[data-queue="` + q + `"]`
	op.WaitUntil("the card's shadow line", `document.querySelector('`+card+` [data-field="shadow"]')?.textContent.includes('1 in the shadow line')`, 10*time.Second)

	op.Click(card + ` .suspects summary`)
	op.WaitUntil("the suspect listed", `document.querySelectorAll('`+card+` .suspect-rows tr').length === 1`, 10*time.Second)
	row := card + ` .suspect-rows tr`
	if got := op.Text(row + ` [data-field="id"]`); got != strconv.FormatInt(st.Ticket, 10) {
		t.Errorf("the suspect's id: %q, want %d", got, st.Ticket)
	}
	if sig, addr := op.Text(row+` [data-field="signals"]`), op.Text(row+` [data-field="address"]`); sig != "address range" || addr != "3f9a1c0e7b52d4a8" {
		t.Errorf("the suspect's signals %q and address %q", sig, addr)
	}
	op.Click(row + ` .clear-button`)
	op.WaitUntil("the card saying so", `document.querySelector('`+card+` .qmessage').textContent.includes('joined the line')`, 10*time.Second)
	op.WaitUntil("the list empty", `document.querySelectorAll('`+card+` .suspect-rows tr').length === 0 && !document.querySelector('`+card+` .suspects-none').hidden`, 10*time.Second)
	if st := in.QueueStats(q); st.Num("shadowLength") != 0 || st.Num("length") != 1 || st.Num("clearedTotal") != 1 {
		t.Errorf("the queue after the clear: %s", st.Raw)
	}
}
