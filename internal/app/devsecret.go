package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/identity"
)

// DevSecretFile is the file in --data-dir where the embedded default keeps
// its auth secret when none is set, so that JWTs and session cookies survive
// a restart and `waitroom token` can sign with it.
const DevSecretFile = "auth-secret"

// AdminTokenFile is the file in --data-dir where the embedded default keeps
// its admin token when none is set, so a restart does not lock the
// operator out of the admin page.
const AdminTokenFile = "admin-token"

// DevSecret returns the auth secret kept in dataDir, making a random one
// (readable by the owner only) on the first start.
func DevSecret(dataDir string) (string, error) { return keptSecret(dataDir, DevSecretFile, 32) }

// ReadDevSecret reads the secret DevSecret keeps in dataDir; an error
// wrapping fs.ErrNotExist when there is none yet.
func ReadDevSecret(dataDir string) (string, error) { return readKept(dataDir, DevSecretFile) }

// AdminToken returns the admin token kept in dataDir, making a random one
// (readable by the owner only) on the first start.
func AdminToken(dataDir string) (string, error) { return keptSecret(dataDir, AdminTokenFile, 16) }

// ReadAdminToken reads the admin token AdminToken keeps in dataDir; an
// error wrapping fs.ErrNotExist when there is none yet.
func ReadAdminToken(dataDir string) (string, error) { return readKept(dataDir, AdminTokenFile) }

// keptSecret returns the secret kept in dataDir's file, making one of n
// random bytes (hex) on the first start.
func keptSecret(dataDir, file string, n int) (string, error) {
	secret, err := readKept(dataDir, file)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	// Written aside, then linked into place: a process starting at the same
	// moment finds either no file or a whole one, and both end up with the
	// secret that won the link.
	tmp, err := os.CreateTemp(dataDir, file+".*") // mode 0600
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(randomHex(n) + "\n")
	if err = errors.Join(err, tmp.Close()); err != nil {
		return "", err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dataDir, file)); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return readKept(dataDir, file)
}

// readKept reads a secret keptSecret keeps.
func readKept(dataDir, file string) (string, error) {
	path := filepath.Join(dataDir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("%s is empty (delete it to make a new secret)", path)
	}
	return secret, nil
}

// SignUserJWT makes the HS256 JWT a shop's login would give user, valid for
// ttl, with the audience and issuer --auth-audience and --auth-issuer
// require (none where empty). It is waitroom's one call into its identity
// code outside the HTTP layer (`waitroom token`, the start banner).
func SignUserJWT(secret, audience, issuer, user string, ttl time.Duration) string {
	return identity.NewWith([]byte(secret), identity.Options{Audience: audience, Issuer: issuer}).SignJWT(user, ttl)
}
