package podtools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Install copies the running test binary whole, executable by anyone,
// under Binary, with no partial file left; into a directory that does not
// exist it fails in words that name it.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	if err := Install(dir); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, Binary))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (%v), want the %d of %s", Binary, len(got), err, len(want), self)
	}
	fi, err := os.Stat(filepath.Join(dir, Binary))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v (%v), want 0755", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want %s alone", len(entries), Binary)
	}

	err = Install(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", Binary+".partial")) {
		t.Errorf("Install into a missing directory: %v, want an error naming it", err)
	}
}
