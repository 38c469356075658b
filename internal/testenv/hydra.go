package testenv

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// The env vars naming the Ory Hydra scripts/test.sh starts (issue 56: the
// admin page's sign-in against a real OpenID Connect provider).
const (
	// HydraPublicVar is its public URL, the issuer.
	HydraPublicVar = "WAITROOM_TEST_HYDRA_PUBLIC"
	// HydraAdminVar is its admin API's URL.
	HydraAdminVar = "WAITROOM_TEST_HYDRA_ADMIN"
	// HydraLoginVar is the loopback host:port its login and consent URLs
	// point to, where the tests' own screens listen (hydratest).
	HydraLoginVar = "WAITROOM_TEST_HYDRA_LOGIN"
	// HydraLogVar is its log: its build, migration and server.
	HydraLogVar = "WAITROOM_TEST_HYDRA_LOG"
)

// HydraReadyWithin bounds the wait for Hydra to be ready. scripts/test.sh
// builds it in the background while go vet and the tests compile (about
// 1.5 minutes cold on a quiet 2-core machine; three times that on a
// loaded one), and a test may reach this first.
const HydraReadyWithin = 6 * time.Minute

// HydraServer is the running Hydra's addresses.
type HydraServer struct {
	Public, Admin, Login string
}

// Hydra returns the Hydra scripts/test.sh started, once it is ready. It is
// no optional part: unset, or never ready, the test fails, with Hydra's
// log (never a skip: the sign-in tests are the proof).
func Hydra(t testing.TB) HydraServer {
	t.Helper()
	h := HydraServer{Public: os.Getenv(HydraPublicVar), Admin: os.Getenv(HydraAdminVar), Login: os.Getenv(HydraLoginVar)}
	if h.Public == "" || h.Admin == "" || h.Login == "" {
		t.Fatalf("no Ory Hydra: %s, %s and %s are not all set (run scripts/test.sh, which builds and starts it)",
			HydraPublicVar, HydraAdminVar, HydraLoginVar)
	}
	deadline := time.Now().Add(HydraReadyWithin)
	for tick := time.NewTicker(250 * time.Millisecond); ; <-tick.C {
		res, err := http.Get(h.Admin + "/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ory Hydra at %s was not ready within %v (last: %v)%s", h.Admin, HydraReadyWithin, answer(res, err), hydraLog())
		}
	}
}

func answer(res *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return res.Status
}

// hydraLog is the end of Hydra's log, for a failure's message.
func hydraLog() string {
	raw, err := os.ReadFile(os.Getenv(HydraLogVar))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	lines = lines[max(0, len(lines)-40):]
	return fmt.Sprintf("\n---- %s ----\n%s", os.Getenv(HydraLogVar), strings.Join(lines, "\n"))
}
