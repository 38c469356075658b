// Command jwts prints n HS256 user JWTs, one per line, for load tests: what
// a shop's login would hand its users.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/waitroom/waitroom/internal/identity"
)

func main() {
	secret := flag.String("secret", "", "HS256 secret (waitroom's --auth-secret)")
	n := flag.Int("n", 10000, "how many users")
	prefix := flag.String("prefix", "bench-user-", "user id prefix")
	flag.Parse()
	if *secret == "" {
		fmt.Fprintln(os.Stderr, "jwts: -secret is required")
		os.Exit(2)
	}
	id := identity.New([]byte(*secret))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i := range *n {
		fmt.Fprintln(w, id.SignJWT(fmt.Sprintf("%s%d", *prefix, i), 2*time.Hour))
	}
}
