//go:build !unix

package journal

import "errors"

// LockFile is the file in a directory that Lock holds.
const LockFile = "LOCK"

// ErrLocked says another process holds the directory.
var ErrLocked = errors.New("in use by another process")

// Lock is a no-op where flock(2) is missing: run one process per
// directory.
func Lock(string) (func() error, error) { return func() error { return nil }, nil }
