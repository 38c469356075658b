// Package journal keeps a store's changes on disk, as Redis's append-only
// file does: records appended to a log in the order they happened, each
// length-prefixed and checksummed so a torn tail is found and dropped, one
// writer goroutine that writes whatever piled up in one go (group commit)
// and syncs it as the policy says, and snapshots that replace the log's
// older segments atomically. It knows nothing of what the records mean.
package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// Policy says when the log is synced to the disk (fsync), as Redis's
// appendfsync does.
type Policy string

const (
	// Always syncs before a change is answered: nothing answered is lost,
	// even to a power cut. Concurrent changes share one sync.
	Always Policy = "always"
	// EverySec syncs once a second: a killed process loses nothing written
	// (the records are in the kernel within milliseconds), a crash of the
	// machine loses at most about the last second.
	EverySec Policy = "everysec"
	// No leaves syncing to the kernel (Linux writes dirty pages back
	// within about 30 s): a killed process still loses nothing written.
	No Policy = "no"
)

// Policies lists the policies, the default first.
var Policies = []Policy{EverySec, Always, No}

// ParsePolicy reads a policy by name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("must be always, everysec or no, got %q", s)
}

// frameHeader is a record's length and the CRC-32C of its payload, both
// little-endian uint32.
const frameHeader = 8

// maxRecord bounds one record, so a damaged length cannot make the reader
// allocate gigabytes.
const maxRecord = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// AppendFrame appends payload to dst as one record.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, crcTable))
	return append(dst, payload...)
}

// ErrTorn says the data ends with a record that is cut short or does not
// match its checksum, with nothing but zeros after it: what a crash during
// a write leaves (a file may be zero-filled past what reached the disk).
var ErrTorn = errors.New("torn last record")

// ErrDamaged says a record that does not match its checksum is followed by
// more data: not a write a crash cut short, but a disk that lost data.
var ErrDamaged = errors.New("damaged record")

// ReadFrames calls fn with each record of data in order, up to the first
// that is cut short or damaged. It returns how many bytes held whole
// records, and ErrTorn or ErrDamaged if anything followed them. An error
// from fn stops it and is returned.
func ReadFrames(data []byte, fn func(payload []byte) error) (int, error) {
	good := 0
	for good < len(data) {
		rest := data[good:]
		if len(rest) < frameHeader {
			return good, tornOrDamaged(rest, len(rest))
		}
		n := binary.LittleEndian.Uint32(rest)
		sum := binary.LittleEndian.Uint32(rest[4:])
		if n > maxRecord || uint64(len(rest)-frameHeader) < uint64(n) {
			return good, tornOrDamaged(rest, len(rest))
		}
		payload := rest[frameHeader : frameHeader+int(n)]
		// Nothing empty is ever written: an empty record is zeros.
		if n == 0 || crc32.Checksum(payload, crcTable) != sum {
			return good, tornOrDamaged(rest, frameHeader+int(n))
		}
		if err := fn(payload); err != nil {
			return good, err
		}
		good += frameHeader + int(n)
	}
	return good, nil
}

// tornOrDamaged tells a bad record of end bytes at the start of rest: torn
// if only zeros follow it, damaged otherwise.
func tornOrDamaged(rest []byte, end int) error {
	for _, b := range rest[end:] {
		if b != 0 {
			return ErrDamaged
		}
	}
	return ErrTorn
}

// WriteFileAtomic replaces path with what write writes, whole or not at
// all, even across a crash: written to a temporary file beside it, synced,
// renamed over path, and the directory synced so the rename itself lasts.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone by then after a rename
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir syncs a directory, so files created, renamed or removed in it
// stay so after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
