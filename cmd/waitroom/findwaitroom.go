package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/httpapi"
)

// waitroomBase is an instance's base URL that has answered as waitroom
// (findWaitroom): the only kind of address adminCall sends the admin token
// to.
type waitroomBase struct{ url string }

// probeTimeout bounds asking an address whether it is waitroom.
const probeTimeout = 10 * time.Second

// findWaitroom proves that base is a waitroom instance before a command
// sends it anything secret: its GET /healthz, asked with no credentials,
// must name the service (httpapi.Service). At a gateway's root that request
// reaches the shop's backend instead (issue 49: `sold-out` printed the
// backend's 404, the admin token already sent to it). Then the gateway's
// default prefix is asked the same way, and used when waitroom answers
// there, with a note on notes: its /healthz and its admin API are both
// waitroom's own routes under one prefix, and the token still goes only
// where waitroom has answered first. Otherwise the error names the prefix.
func findWaitroom(ctx context.Context, base string, notes io.Writer) (waitroomBase, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	answered, err := askHealth(ctx, base)
	if err != nil {
		return waitroomBase{}, err // nobody answers there: no prefix would help
	}
	if answered == "" {
		return waitroomBase{base}, nil
	}
	prefixed := base + gateway.DefaultPrefix
	if strings.HasSuffix(base, gateway.DefaultPrefix) {
		return waitroomBase{}, fmt.Errorf("%s is not waitroom: GET %s/healthz %s; "+
			"is --addr waitroom's, with the gateway's --prefix if it has another?", base, base, answered)
	}
	if again, err := askHealth(ctx, prefixed); err == nil && again == "" {
		fmt.Fprintf(notes, "waitroom: %s is not waitroom (GET /healthz %s); waitroom answers under the gateway's prefix: using %s\n", base, answered, prefixed)
		return waitroomBase{prefixed}, nil
	}
	return waitroomBase{}, fmt.Errorf("%s is not waitroom: GET %s/healthz %s; "+
		"is --addr the gateway? add its prefix: %s (or its --prefix)", base, base, answered, prefixed)
}

// maxHealthAnswer bounds what is read of a /healthz answer: waitroom's is
// some forty bytes; another server's may be a whole page.
const maxHealthAnswer = 64 << 10

// askHealth asks base's GET /healthz, following no redirect, and says
// what answered when it was not waitroom ("" when it was). An error:
// nothing answered at all.
func askHealth(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	res, err := adminClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxHealthAnswer))
	var health struct {
		Service string `json:"service"`
	}
	switch {
	case res.StatusCode != http.StatusOK && res.Header.Get("Location") != "":
		return fmt.Sprintf("answered %s, to %s (not followed)", res.Status, res.Header.Get("Location")), nil
	case res.StatusCode != http.StatusOK:
		return "answered " + res.Status, nil
	case json.Unmarshal(raw, &health) != nil || health.Service != httpapi.Service:
		return "answered 200 OK without naming the service waitroom", nil
	}
	return "", nil
}
