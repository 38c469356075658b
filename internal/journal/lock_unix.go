//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in a directory that Lock holds.
const LockFile = "LOCK"

// ErrLocked says another process holds the directory.
var ErrLocked = errors.New("in use by another process")

// Lock takes the directory for this process alone (an advisory lock on
// its LOCK file, which the kernel lets go of when the process ends, however
// it ends), so two processes never write one journal. Unlock lets it go.
func Lock(dir string) (unlock func() error, err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				return nil, fmt.Errorf("%s: %w (pid %s)", dir, ErrLocked, pid)
			}
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, err
	}
	// The holder's pid, for the message another process gets.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f.Close, nil // closing the file releases the lock
}
