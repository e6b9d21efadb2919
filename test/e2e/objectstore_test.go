//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The object store of the local cluster (versitygw, started by
// hack/local-up.sh) serves its bucket through package objectstore: two
// Databases of one name, made one after the other (two UIDs), keep their
// files apart under one prefix; a stream of unknown length goes up in
// parts and comes back whole; a missing key is ErrNotFound; a wrong
// secret is refused, in the store's words.
func TestLocalObjectStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := e2eutil.LocalObjectStore(t, localDir)
	cfg.Prefix = "e2e/" + t.Name()
	store, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, second := objectstore.DatabaseDir("shop", "orders", "uid-1"), objectstore.DatabaseDir("shop", "orders", "uid-2")

	// More than one part, of unknown length.
	big := make([]byte, objectstore.PartSize+1<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, first+"/dumps/a.sql", io.MultiReader(bytes.NewReader(big)), -1); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, second+"/dumps/a.sql", strings.NewReader("second"), 6); err != nil {
		t.Fatal(err)
	}
	r, err := store.Get(ctx, first+"/dumps/a.sql")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || sha256.Sum256(got) != sha256.Sum256(big) {
		t.Errorf("read back %d bytes (%v), want the %d written", len(got), err, len(big))
	}
	for dir, want := range map[string]int64{first: int64(len(big)), second: 6} {
		objects, err := store.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(objects) != 1 || objects[0].Key != dir+"/dumps/a.sql" || objects[0].Size != want {
			t.Errorf("List(%s) = %+v, want %s/dumps/a.sql of %d bytes alone", dir, objects, dir, want)
		}
	}
	if err := store.Delete(ctx, first+"/dumps/a.sql"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, first+"/dumps/a.sql"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Get of a deleted key: %v, want ErrNotFound", err)
	}
	if all, err := store.List(ctx, ""); err != nil || len(all) != 1 || all[0].Key != second+"/dumps/a.sql" {
		t.Errorf("List of the prefix after the delete = %+v, %v; want the second Database's file alone", all, err)
	}

	cfg.SecretAccessKey = "wrong"
	wrong, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.List(ctx, "")
	t.Logf("a wrong secret: %v", err)
	if err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("List with a wrong secret: %v, want the store's refusal of the signature", err)
	}
}

// `controller objectstore`, the command the database pods run, against the
// local cluster's store: put reads standard input, get writes standard
// output, list prints each key with its size, and a key the store does
// not hold exits 3 (what PostgreSQL's restore_command tells from a
// failure). The credentials are in the environment only.
func TestObjectStoreCommand(t *testing.T) {
	t.Parallel()
	cfg := e2eutil.LocalObjectStore(t, localDir)
	env := append(os.Environ(),
		objectstore.EnvEndpoint+"="+cfg.Endpoint, objectstore.EnvBucket+"="+cfg.Bucket, objectstore.EnvRegion+"="+cfg.Region,
		objectstore.EnvPrefix+"=e2e/"+t.Name(),
		objectstore.EnvAccessKeyID+"="+cfg.AccessKeyID, objectstore.EnvSecretAccessKey+"="+cfg.SecretAccessKey)
	run := func(stdin []byte, args ...string) ([]byte, string, int) {
		t.Helper()
		cmd := exec.Command(controllerBin, append([]string{"objectstore"}, args...)...)
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("controller objectstore %v: %v", args, err)
		}
		return stdout.Bytes(), stderr.String(), cmd.ProcessState.ExitCode()
	}

	wal := make([]byte, 16<<20)
	if _, err := rand.Read(wal); err != nil {
		t.Fatal(err)
	}
	key := "shop/orders/uid-1/wal/000000010000000000000001"
	if _, stderr, code := run(wal, "put", key); code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	got, stderr, code := run(nil, "get", key)
	if code != 0 || !bytes.Equal(got, wal) {
		t.Errorf("get: exit %d (%s), %d bytes; want exit 0 and the %d bytes put", code, stderr, len(got), len(wal))
	}
	listed, stderr, code := run(nil, "list", "shop/orders/uid-1")
	fields := strings.Split(strings.TrimSpace(string(listed)), "\t")
	if code != 0 || len(fields) != 3 || fields[0] != key || fields[1] != "16777216" {
		t.Errorf("list: exit %d (%s), %q; want one line: the key, 16777216 and a time", code, stderr, listed)
	}
	if _, stderr, code := run(nil, "get", "shop/orders/uid-1/wal/000000010000000000000002"); code != objectstore.ExitNotFound || !strings.Contains(stderr, "no such object") {
		t.Errorf("get of a key the store lacks: exit %d, %q; want exit %d, no such object", code, stderr, objectstore.ExitNotFound)
	}

	// archive_command and restore_command: a segment goes up once; the
	// same bytes again are success (a retry), other bytes under its name
	// are refused and the store keeps the first; a missing segment is the
	// archive's end (exit 1), a store that refuses stops recovery (255).
	dir := t.TempDir()
	segment, other := filepath.Join(dir, "000000010000000000000003"), filepath.Join(dir, "other", "000000010000000000000003")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segment, wal, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, wal[:1<<20], 0o600); err != nil {
		t.Fatal(err)
	}
	for i, file := range []string{segment, segment} {
		if _, stderr, code := run(nil, "wal-push", file); code != 0 {
			t.Errorf("wal-push #%d: exit %d: %s", i+1, code, stderr)
		}
	}
	if _, stderr, code := run(nil, "wal-push", other); code != objectstore.ExitFailed || !strings.Contains(stderr, "the store holds other bytes under this name") {
		t.Errorf("wal-push of other bytes under the name: exit %d, %q; want exit 1 and a refusal", code, stderr)
	}
	// delete, twice: the second finds nothing, which is no error.
	for i := 1; i <= 2; i++ {
		if _, stderr, code := run(nil, "delete", "shop/orders/uid-1/wal/000000010000000000000001"); code != 0 {
			t.Errorf("delete #%d: exit %d: %s", i, code, stderr)
		}
	}
	if listed, _, _ := run(nil, "list", "shop/orders/uid-1"); strings.Contains(string(listed), "000000010000000000000001") {
		t.Errorf("after delete, list still shows it: %s", listed)
	}
	fetched := filepath.Join(dir, "RECOVERYXLOG")
	if _, stderr, code := run(nil, "wal-fetch", "000000010000000000000003", fetched); code != 0 {
		t.Errorf("wal-fetch: exit %d: %s", code, stderr)
	}
	if got, err := os.ReadFile(fetched); err != nil || !bytes.Equal(got, wal) {
		t.Errorf("wal-fetch wrote %d bytes (%v), want the first segment's %d", len(got), err, len(wal))
	}
	if _, _, code := run(nil, "wal-fetch", "000000010000000000000004", fetched); code != objectstore.ExitFailed {
		t.Errorf("wal-fetch of a segment the store lacks: exit %d, want 1 (the archive's end)", code)
	}
	// put-output, the backup Jobs' upload: a command's output goes up
	// whole and its size is printed; a command that fails, after more than
	// a part of output, leaves nothing under a new key and the first bytes
	// under a key that held them.
	dump := "shop/orders/uid-1/dumps/a.sql"
	if out, stderr, code := run(nil, "put-output", dump, "cat", segment); code != 0 || string(out) != "size=16777216\n" {
		t.Errorf("put-output: exit %d (%s), printed %q; want exit 0 and size=16777216", code, stderr, out)
	}
	if got, stderr, code := run(nil, "get", dump); code != 0 || !bytes.Equal(got, wal) {
		t.Errorf("get of put-output's key: exit %d (%s), %d bytes; want the %d bytes the command wrote", code, stderr, len(got), len(wal))
	}
	failing := `cat "$1" "$1" "$1"; echo "the dump failed" >&2; exit 7`
	for _, key := range []string{dump, "shop/orders/uid-1/dumps/b.sql"} {
		out, stderr, code := run(nil, "put-output", key, "sh", "-c", failing, "sh", segment)
		if code != objectstore.ExitFailed || len(out) != 0 || !strings.Contains(stderr, "the dump failed") || !strings.Contains(stderr, "exit status 7") {
			t.Errorf("put-output of a failing command to %s: exit %d, printed %q, stderr %q; want exit 1, nothing printed, the command's words and its exit status", key, code, out, stderr)
		}
	}
	if got, stderr, code := run(nil, "get", dump); code != 0 || !bytes.Equal(got, wal) {
		t.Errorf("after a failed put-output over it, get: exit %d (%s), %d bytes; want the first %d bytes", code, stderr, len(got), len(wal))
	}
	if _, _, code := run(nil, "get", "shop/orders/uid-1/dumps/b.sql"); code != objectstore.ExitNotFound {
		t.Errorf("after a failed put-output to a new key, get exits %d, want %d: nothing may be written", code, objectstore.ExitNotFound)
	}

	// put-base-backup, the base backup Jobs' upload: as put-output, and it
	// reads the WAL range from the stream's manifest as it passes; a
	// stream with none is no base backup, and leaves nothing.
	baseTar := filepath.Join(dir, "base.tar")
	writeTar(t, baseTar, "backup_label", "START WAL LOCATION: 0/D000028 (file 00000001000000000000000D)\n",
		"base/5/16384", string(wal[:3<<20]),
		"backup_manifest", "{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n\"Files\": [\n],\n\"WAL-Ranges\": [\n"+
			"{ \"Timeline\": 1, \"Start-LSN\": \"0/D000028\", \"End-LSN\": \"0/D000100\" }\n],\n\"Manifest-Checksum\": \"00\"}\n")
	noManifest := filepath.Join(dir, "no-manifest.tar")
	writeTar(t, noManifest, "base/5/16384", string(wal[:3<<20]))
	base := "shop/orders/uid-1/base/a.tar"
	want, err := os.ReadFile(baseTar)
	if err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := run(nil, "put-base-backup", base, "cat", baseTar); code != 0 ||
		string(out) != fmt.Sprintf("size=%d timeline=1 start=0/D000028 stop=0/D000100\n", len(want)) {
		t.Errorf("put-base-backup: exit %d (%s), printed %q; want exit 0, the size and the WAL range", code, stderr, out)
	}
	if got, stderr, code := run(nil, "get", base); code != 0 || !bytes.Equal(got, want) {
		t.Errorf("get of put-base-backup's key: exit %d (%s), %d bytes; want the %d bytes of the stream", code, stderr, len(got), len(want))
	}
	if out, stderr, code := run(nil, "put-base-backup", "shop/orders/uid-1/base/b.tar", "cat", noManifest); code != objectstore.ExitFailed ||
		len(out) != 0 || !strings.Contains(stderr, "holds no backup_manifest") {
		t.Errorf("put-base-backup of a stream with no manifest: exit %d, printed %q, stderr %q; want exit 1, nothing printed, and why", code, out, stderr)
	}
	if _, _, code := run(nil, "get", "shop/orders/uid-1/base/b.tar"); code != objectstore.ExitNotFound {
		t.Errorf("after put-base-backup of no base backup, get exits %d, want %d: nothing may be written", code, objectstore.ExitNotFound)
	}

	// wal-check, a restore's check of its WAL chain: timeline 1's
	// segments 1 to 3, timeline 2 from its switch in segment 3 on; a gap
	// is refused, naming the first missing segment.
	saved := env
	env = append(append([]string(nil), env...), objectstore.EnvPrefix+"=e2e/"+t.Name()+"/chain")
	for _, name := range []string{"000000010000000000000001", "000000010000000000000002", "000000010000000000000003",
		"000000020000000000000003", "000000020000000000000004"} {
		if _, stderr, code := run([]byte(name), "put", "wal/"+name); code != 0 {
			t.Fatalf("put %s: exit %d: %s", name, code, stderr)
		}
	}
	if _, stderr, code := run([]byte("1\t0/3000100\tno recovery target specified\n"), "put", "wal/00000002.history"); code != 0 {
		t.Fatalf("put the history: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"000000010000000000000001"}, 0, "timeline 2: 000000010000000000000001 to 000000020000000000000004\n"},
		{[]string{"000000010000000000000001", "1"}, 0, "timeline 1: 000000010000000000000001 to 000000010000000000000003\n"},
		{[]string{"000000010000000000000001", "3"}, objectstore.ExitFailed, `timeline "3": the archive holds no history of it`},
		{[]string{"00000001000000000000000X"}, objectstore.ExitFailed, "is not a WAL segment's name"},
	} {
		out, stderr, code := run(nil, append([]string{"wal-check"}, tc.args...)...)
		if code != tc.wantCode || (code == 0 && string(out) != tc.want) || (code != 0 && !strings.Contains(stderr, tc.want)) {
			t.Errorf("wal-check %v: exit %d, %q, %q; want exit %d and %q", tc.args, code, out, stderr, tc.wantCode, tc.want)
		}
	}
	if _, stderr, code := run(nil, "delete", "wal/000000010000000000000002"); code != 0 {
		t.Fatalf("delete: exit %d: %s", code, stderr)
	}
	if out, stderr, code := run(nil, "wal-check", "000000010000000000000001"); code != objectstore.ExitFailed ||
		!strings.Contains(stderr, "lacks segment 000000010000000000000002 (it holds 000000020000000000000003") {
		t.Errorf("wal-check across a gap: exit %d, %q, %q; want exit 1 naming 000000010000000000000002", code, out, stderr)
	}
	if out, stderr, code := run(nil, "wal-check", "000000010000000000000003"); code != 0 || string(out) != "timeline 2: 000000010000000000000003 to 000000020000000000000004\n" {
		t.Errorf("wal-check after the gap: exit %d, %q, %q; want timeline 2 from the switch's segment on", code, out, stderr)
	}
	// wal-prune, the archive's retention: what lies before the first
	// segment a kept base backup needs goes, on every timeline, with its
	// backup label and partial file; that segment, later ones and the
	// history files stay.
	for _, name := range []string{"000000010000000000000001.00000028.backup", "000000010000000000000002.partial"} {
		if _, stderr, code := run([]byte(name), "put", "wal/"+name); code != 0 {
			t.Fatalf("put %s: exit %d: %s", name, code, stderr)
		}
	}
	if out, stderr, code := run(nil, "wal-prune", "000000020000000000000003"); code != 0 || string(out) != "deleted 3 files before 000000020000000000000003\n" {
		t.Errorf("wal-prune: exit %d, %q, %q; want 3 files deleted", code, out, stderr)
	}
	left, _, _ := run(nil, "list", "wal")
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(left)), "\n") {
		kept = append(kept, filepath.Base(strings.Fields(line)[0]))
	}
	if want := []string{"000000010000000000000003", "00000002.history", "000000020000000000000003", "000000020000000000000004"}; !slices.Equal(kept, want) {
		t.Errorf("after wal-prune the archive holds %v, want %v", kept, want)
	}
	if _, stderr, code := run(nil, "wal-prune", "the-beginning"); code != objectstore.ExitFailed || !strings.Contains(stderr, "is not a WAL segment's name") {
		t.Errorf("wal-prune of no segment: exit %d, %q; want exit 1 and why", code, stderr)
	}
	env = saved

	env = append(env, objectstore.EnvSecretAccessKey+"=wrong")
	if _, stderr, code := run(nil, "wal-fetch", "000000010000000000000003", fetched); code != objectstore.ExitAbortRecovery {
		t.Errorf("wal-fetch with a wrong secret: exit %d (%s), want %d", code, stderr, objectstore.ExitAbortRecovery)
	}
}

// writeTar writes a tar file of the files given (name, content, ...).
func writeTar(t *testing.T, file string, files ...string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for i := 0; i < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o600, Size: int64(len(files[i+1]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, files[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
