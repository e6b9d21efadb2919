// Package podtools puts the controller's own binary into the pods it
// builds, so that the commands they run beside the database server (such
// as `controller objectstore`) come from the controller's image while the
// database image stays as it is: an init container of the controller's
// image runs `controller install-tools DIR`, DIR being an emptyDir volume
// the other containers mount.
package podtools

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Binary is the name of the controller's binary in DIR.
const Binary = "controller"

// Install copies the running executable to dir/Binary, mode 0755, through
// a temporary name so that no container ever runs half a file.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install-tools: the running executable: %w", err)
	}
	return copyExecutable(self, filepath.Join(dir, Binary))
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("install-tools: %w", err)
	}
	defer in.Close()
	tmp := to + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("install-tools: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("install-tools: writing %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install-tools: writing %s: %w", tmp, err)
	}
	// The umask may have narrowed the mode: the database's user, not root,
	// runs it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("install-tools: %w", err)
	}
	if err := os.Rename(tmp, to); err != nil {
		return fmt.Errorf("install-tools: %w", err)
	}
	return nil
}
