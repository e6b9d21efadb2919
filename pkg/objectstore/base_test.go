package objectstore

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dbcontroller/database-controller/pkg/wal"
)

// manifest is a backup manifest as pg_basebackup writes it, with the WAL
// ranges given (newest timeline first).
func manifest(ranges ...string) string {
	return `{ "PostgreSQL-Backup-Manifest-Version": 1,
"Files": [
{ "Path": "backup_label", "Size": 227, "Last-Modified": "2026-11-26 09:26:24 GMT", "Checksum-Algorithm": "CRC32C", "Checksum": "0a1b2c3d" },
{ "Path": "global/pg_control", "Size": 8192, "Last-Modified": "2026-11-26 09:26:24 GMT", "Checksum-Algorithm": "CRC32C", "Checksum": "43872087" }
],
"WAL-Ranges": [
` + strings.Join(ranges, ",\n") + `
],
"Manifest-Checksum": "0c16aa29b888881267df87481e9cfafd124759f050c9d0998b8267a4582c82d6"}
`
}

// tarOf is a tar stream of the files given (name, content, ...).
func tarOf(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o600, Size: int64(len(files[i+1]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// pg_basebackup pads its stream past the archive's end.
	return append(buf.Bytes(), make([]byte, 2048)...)
}

// A base backup's WAL range is its manifest's: from the start of the
// oldest range to the end of the newest, on the oldest's timeline (the
// one its WAL begins on). A stream that is no base backup is refused.
func TestReadBaseBackup(t *testing.T) {
	lsn := func(s string) wal.LSN {
		l, err := wal.ParseLSN(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	one := `{ "Timeline": 1, "Start-LSN": "0/D000028", "End-LSN": "0/D000100" }`
	for _, tc := range []struct {
		name    string
		stream  []byte
		want    BaseBackup
		wantErr string
	}{
		{"one timeline", tarOf(t, "backup_label", "START WAL LOCATION: 0/D000028\n", "base/1/1259", strings.Repeat("x", 9000), "backup_manifest", manifest(one)),
			BaseBackup{Timeline: 1, Start: lsn("0/D000028"), Stop: lsn("0/D000100")}, ""},
		{"a promotion during the copy", tarOf(t, "backup_manifest", manifest(
			`{ "Timeline": 3, "Start-LSN": "0/E0000A0", "End-LSN": "0/E000200" }`,
			`{ "Timeline": 2, "Start-LSN": "0/D000028", "End-LSN": "0/E0000A0" }`)),
			BaseBackup{Timeline: 2, Start: lsn("0/D000028"), Stop: lsn("0/E000200")}, ""},
		{"no manifest", tarOf(t, "backup_label", "START WAL LOCATION: 0/D000028\n"), BaseBackup{}, "holds no backup_manifest"},
		{"a manifest with no range", tarOf(t, "backup_manifest", manifest()), BaseBackup{}, "names no WAL range"},
		{"a range that does not read", tarOf(t, "backup_manifest", manifest(`{ "Timeline": 1, "Start-LSN": "D000028", "End-LSN": "0/D000100" }`)),
			BaseBackup{}, "WAL range"},
		{"no tar at all", []byte(strings.Repeat("not a tar stream\n", 100)), BaseBackup{}, "tar stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readBaseBackup(bytes.NewReader(tc.stream))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			// Passed through, the stream is unchanged, and ends as it does.
			br := newBaseBackupReader(bytes.NewReader(tc.stream))
			out, err := io.ReadAll(iotest.OneByteReader(br))
			if err != nil || !bytes.Equal(out, tc.stream) || br.base != tc.want {
				t.Errorf("passed through: %d bytes of %d, %v, %+v", len(out), len(tc.stream), err, br.base)
			}
		})
	}
}

// A stream that is no base backup ends with the reason instead of io.EOF,
// however often it is read after: the upload is abandoned.
func TestBaseBackupReaderFailsAtTheEnd(t *testing.T) {
	stream := tarOf(t, "backup_label", "START WAL LOCATION: 0/D000028\n")
	br := newBaseBackupReader(bytes.NewReader(stream))
	out, err := io.ReadAll(br)
	if err == nil || !strings.Contains(err.Error(), "no backup_manifest") || len(out) != len(stream) {
		t.Fatalf("read %d bytes of %d, err %v; want all, then the missing manifest", len(out), len(stream), err)
	}
	if _, again := br.Read(make([]byte, 10)); again != err {
		t.Errorf("read again: %v, want %v", again, err)
	}
}

// The line put-base-backup prints reads back; a word missing or wrong is
// no base backup.
func TestParseBaseBackupLine(t *testing.T) {
	size, b, ok := ParseBaseBackupLine("size=23758336 timeline=1 start=0/D000028 stop=0/D000100\n")
	if !ok || size != 23758336 || b.String() != "timeline=1 start=0/D000028 stop=0/D000100" {
		t.Errorf("got %d %v %v", size, b, ok)
	}
	for _, bad := range []string{"", "size=12", "size=12 timeline=0 start=0/1 stop=0/2", "size=12 timeline=1 start=0/3 stop=0/2",
		"size=-1 timeline=1 start=0/1 stop=0/2", "size=12 timeline=1 start=x stop=0/2"} {
		if _, _, ok := ParseBaseBackupLine(bad); ok {
			t.Errorf("%q read as a base backup", bad)
		}
	}
}
