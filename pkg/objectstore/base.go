package objectstore

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dbcontroller/database-controller/pkg/wal"
)

// BaseBackup is what a PostgreSQL base backup's tar stream says of the
// WAL a restore from it needs: from Start, on Timeline, to at least Stop,
// where the copy is consistent.
type BaseBackup struct {
	Timeline    uint32
	Start, Stop wal.LSN
}

// String is how put-base-backup prints it, after the size.
func (b BaseBackup) String() string {
	return fmt.Sprintf("timeline=%d start=%s stop=%s", b.Timeline, b.Start, b.Stop)
}

// ParseBaseBackupLine reads a base backup from the words put-base-backup
// prints ("size=N timeline=T start=LSN stop=LSN"): size and the base
// backup, ok false when a word is missing or wrong.
func ParseBaseBackupLine(line string) (size int64, b BaseBackup, ok bool) {
	fields := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	var err error
	var tl uint64
	if _, err = fmt.Sscan(fields["size"], &size); err != nil || size < 0 {
		return 0, BaseBackup{}, false
	}
	if _, err = fmt.Sscan(fields["timeline"], &tl); err != nil || tl == 0 || tl > 0xFFFFFFFF {
		return 0, BaseBackup{}, false
	}
	b.Timeline = uint32(tl)
	if b.Start, err = wal.ParseLSN(fields["start"]); err != nil {
		return 0, BaseBackup{}, false
	}
	if b.Stop, err = wal.ParseLSN(fields["stop"]); err != nil || b.Stop < b.Start {
		return 0, BaseBackup{}, false
	}
	return size, b, true
}

// readBaseBackup reads a base backup's tar stream, as pg_basebackup
// --format=tar writes it to its standard output, to its end: the WAL
// range of its backup_manifest. A stream with no manifest, or a manifest
// with no WAL range, is an error: it is not a base backup that a restore
// could use.
func readBaseBackup(r io.Reader) (BaseBackup, error) {
	tr := tar.NewReader(r)
	var b BaseBackup
	found := false
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return BaseBackup{}, fmt.Errorf("reading the base backup's tar stream: %w", err)
		}
		if hdr.Name == "backup_manifest" || hdr.Name == "./backup_manifest" {
			if b, err = readManifest(tr); err != nil {
				return BaseBackup{}, err
			}
			found = true
		}
	}
	if !found {
		return BaseBackup{}, errors.New("the base backup's tar stream holds no backup_manifest, which says where its WAL begins and ends")
	}
	return b, nil
}

// readManifest reads the WAL range of a backup manifest (PostgreSQL 13 and
// later): the lines of its "WAL-Ranges" array, one range to a line, after
// one line for each file of the copy. It reads line by line, so that the
// manifest of a data directory of millions of files is never held whole.
func readManifest(r io.Reader) (BaseBackup, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	inRanges := false
	var b BaseBackup
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, `"WAL-Ranges"`) {
			inRanges = true
			continue
		}
		if !inRanges || !strings.HasPrefix(line, "{") {
			continue
		}
		var wr struct {
			Timeline uint32 `json:"Timeline"`
			Start    string `json:"Start-LSN"`
			End      string `json:"End-LSN"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSuffix(line, ",")), &wr); err != nil {
			break // the manifest's last line, past the ranges
		}
		start, err1 := wal.ParseLSN(wr.Start)
		end, err2 := wal.ParseLSN(wr.End)
		if err := errors.Join(err1, err2); err != nil || wr.Timeline == 0 {
			return BaseBackup{}, fmt.Errorf("the backup manifest's WAL range %s: %v", line, err)
		}
		// The ranges run from the newest timeline to the oldest: the
		// first is where the copy became consistent, the last where its
		// WAL begins.
		if n == 0 {
			b.Stop = end
		}
		b.Timeline, b.Start = wr.Timeline, start
		n++
	}
	if err := sc.Err(); err != nil {
		return BaseBackup{}, fmt.Errorf("reading the backup manifest: %w", err)
	}
	if n == 0 {
		return BaseBackup{}, errors.New("the backup manifest names no WAL range")
	}
	return b, nil
}

// baseBackupReader passes a base backup's tar stream through unchanged,
// reading it as it passes (readBaseBackup); at the stream's end it ends
// with an error instead, when the stream is not a base backup, so that
// the upload it feeds is abandoned.
type baseBackupReader struct {
	r      io.Reader
	pw     *io.PipeWriter
	parsed chan error
	base   BaseBackup
	// ended is the stream's end once read: io.EOF, or why it is not a
	// base backup.
	ended error
}

func newBaseBackupReader(r io.Reader) *baseBackupReader {
	pr, pw := io.Pipe()
	br := &baseBackupReader{r: r, pw: pw, parsed: make(chan error, 1)}
	go func() {
		b, err := readBaseBackup(pr)
		// Whatever follows the archive's end (padding), or all of the
		// stream after an error: the upload never waits on the reading.
		_, _ = io.Copy(io.Discard, pr)
		br.base = b
		br.parsed <- err
	}()
	return br
}

func (br *baseBackupReader) Read(p []byte) (int, error) {
	if br.ended != nil {
		return 0, br.ended
	}
	n, err := br.r.Read(p)
	if n > 0 {
		if _, werr := br.pw.Write(p[:n]); werr != nil {
			return n, werr
		}
	}
	if errors.Is(err, io.EOF) {
		br.pw.Close()
		br.ended = io.EOF
		if perr := <-br.parsed; perr != nil {
			br.ended = perr
		}
		return n, br.ended
	} else if err != nil {
		br.pw.CloseWithError(err)
	}
	return n, err
}
