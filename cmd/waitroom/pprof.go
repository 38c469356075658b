//go:build pprof

package main

import (
	"net/http"
	_ "net/http/pprof" // profiling endpoints, only in binaries built with -tags pprof
	"os"
)

// A profiling build (go build -tags pprof) serves /debug/pprof on
// WAITROOM_PPROF_ADDR (default 127.0.0.1:6060), apart from the API.
func init() {
	addr := os.Getenv("WAITROOM_PPROF_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	go http.ListenAndServe(addr, nil)
}
