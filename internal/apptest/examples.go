package apptest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CopyTree copies the regular files under src into a new temp dir (the
// examples are built there, never in the source tree).
func CopyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || strings.HasSuffix(rel, ".gen.go") {
			return nil // a client generated locally is not the one under test
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// StartExample runs argv with env added to the test's environment until the
// test ends, and waits for it to say it listens.
func StartExample(t *testing.T, argv []string, env ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &SyncWriter{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s's stderr:\n%s", argv[0], stderr.String())
		}
	})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening on ") {
				listening <- sc.Text()
			}
		}
		close(listening)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case line, ok := <-listening:
		if !ok {
			t.Fatalf("%v ended without listening: %s", argv, stderr.String())
		}
		t.Log(line)
	case <-ctx.Done():
		t.Fatalf("%v did not say it listens within a minute: %s", argv, stderr.String())
	}
}
