package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/dbcontroller/database-controller/pkg/wal"
)

// The environment of Command: where the store is, and how to sign in.
// The pods the controller builds set them, the credentials from the
// Secret the Database names (secretKeyRef): none is ever in an argument,
// where ps would show it.
const (
	EnvEndpoint        = "DBC_OBJECTSTORE_ENDPOINT"
	EnvBucket          = "DBC_OBJECTSTORE_BUCKET"
	EnvPrefix          = "DBC_OBJECTSTORE_PREFIX"
	EnvRegion          = "DBC_OBJECTSTORE_REGION"
	EnvCAFile          = "DBC_OBJECTSTORE_CA_FILE"
	EnvAccessKeyID     = "DBC_OBJECTSTORE_ACCESS_KEY_ID"
	EnvSecretAccessKey = "DBC_OBJECTSTORE_SECRET_ACCESS_KEY"
	// EnvArchiveFailureFile, when set, is a file wal-push writes its error
	// to when it fails, and removes when it succeeds: the words of the last
	// failure, which PostgreSQL's own statistics (pg_stat_archiver) lack,
	// for the controller to read (relative to the data directory, where
	// PostgreSQL runs archive_command).
	EnvArchiveFailureFile = "DBC_ARCHIVE_FAILURE_FILE"
)

// Exit codes of Command besides 0: a failure, a usage error, and a key the
// store does not hold (get). wal-fetch exits ExitFailed for a segment the
// store does not hold, which PostgreSQL takes for the archive's end, and
// ExitAbortRecovery for any other failure, on which PostgreSQL stops
// recovering (an exit code above 125) instead of ending it early and
// promoting without the WAL it could not read.
const (
	ExitFailed        = 1
	ExitUsage         = 2
	ExitNotFound      = 3
	ExitAbortRecovery = 255
)

// The directories, under a Database's (DatabaseDir), of its archived WAL,
// of its dumps and of its base backups.
const (
	WALDir   = "wal"
	DumpsDir = "dumps"
	BaseDir  = "base"
)

const usage = `usage: controller objectstore put KEY   (writes standard input to KEY)
       controller objectstore get KEY   (writes KEY to standard output; exit 3 when the store does not hold it)
       controller objectstore put-output KEY CMD [ARG...]
                                         (runs CMD and writes its standard output to KEY, then prints size=BYTES;
                                          when CMD fails, the upload is abandoned and KEY is not written)
       controller objectstore put-base-backup KEY CMD [ARG...]
                                         (as put-output, for a command that writes a PostgreSQL base backup as a tar
                                          stream; prints size=BYTES timeline=T start=LSN stop=LSN, the WAL range of
                                          its backup_manifest; a stream with none is abandoned as a failure)
       controller objectstore list DIR  (prints each key under DIR, its size and time, one per line)
       controller objectstore delete KEY (a key the store does not hold is no error)
       controller objectstore wal-push PATH       (archive_command: the file PATH to wal/NAME, NAME being PATH's
                                                   last part, unless the store holds it; never over other bytes)
       controller objectstore wal-check FROM [TIMELINE]
                                         (checks that wal/ holds every segment a restore needs from the segment
                                          FROM on, along TIMELINE (hexadecimal; the newest that follows FROM's
                                          when unset), and prints the last one; exit 1 naming the first missing)
       controller objectstore wal-prune FIRST (deletes from wal/ the segments numbered below the segment FIRST, on
                                          every timeline, with their .partial and .backup files; history files stay)
       controller objectstore wal-fetch NAME PATH (restore_command: wal/NAME to PATH; exit 1 when the store does
                                                   not hold it, 255 on any other failure, which stops recovery)
The store is in the environment: ` + EnvEndpoint + `, ` + EnvBucket + `, ` + EnvPrefix + `, ` + EnvRegion + `,
` + EnvCAFile + `, ` + EnvAccessKeyID + ` and ` + EnvSecretAccessKey + `.
`

// ConfigFromEnv reads a Config from the environment getenv reads.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		Endpoint: getenv(EnvEndpoint), Bucket: getenv(EnvBucket), Prefix: getenv(EnvPrefix), Region: getenv(EnvRegion),
		AccessKeyID: getenv(EnvAccessKeyID), SecretAccessKey: getenv(EnvSecretAccessKey),
	}
	if f := getenv(EnvCAFile); f != "" {
		ca, err := os.ReadFile(f)
		if err != nil {
			return Config{}, fmt.Errorf("object store CA: %w", err)
		}
		cfg.CA = ca
	}
	return cfg, nil
}

// Command is `controller objectstore VERB ARGS...` (usage above), run inside
// the pods the controller builds, from a binary of the controller's image
// that an init container copies in: the database images stay as they are.
// It returns the exit code.
func Command(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The number of arguments of each verb; put-output's command has any
	// number after the key and its name.
	arity := map[string]int{"put": 1, "get": 1, "list": 1, "delete": 1, "wal-push": 1, "wal-fetch": 2, "put-output": 2, "put-base-backup": 2, "wal-check": 1, "wal-prune": 1}
	if len(args) == 0 || arity[args[0]] == 0 || len(args)-1 != arity[args[0]] &&
		(args[0] != "put-output" && args[0] != "put-base-backup" || len(args)-1 < arity[args[0]]) && (args[0] != "wal-check" || len(args) != 3) {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	verb := args[0]
	cfg, err := ConfigFromEnv(getenv)
	if err == nil {
		var s *Store
		if s, err = New(cfg); err == nil {
			err = run(ctx, s, verb, args[1:], stdin, stdout, stderr)
		}
	}
	if verb == "wal-push" {
		if f := getenv(EnvArchiveFailureFile); f != "" {
			recordArchiveFailure(f, err, stderr)
		}
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "controller objectstore %s: %v\n", verb, err)
	switch {
	case verb == "wal-fetch" && errors.Is(err, ErrNotFound):
		return ExitFailed
	case verb == "wal-fetch":
		return ExitAbortRecovery
	case errors.Is(err, ErrNotFound):
		return ExitNotFound
	default:
		return ExitFailed
	}
}

func run(ctx context.Context, s *Store, verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch verb {
	case "put":
		return s.Put(ctx, args[0], stdin, -1)
	case "put-output":
		return putOutput(ctx, s, args[0], args[1:], nil, stdout, stderr)
	case "put-base-backup":
		return putOutput(ctx, s, args[0], args[1:], newBaseBackupReader, stdout, stderr)
	case "wal-check":
		return walCheck(ctx, s, args[0], args[1:], stdout)
	case "wal-prune":
		return walPrune(ctx, s, args[0], stdout)
	case "get":
		r, err := s.Get(ctx, args[0])
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(stdout, r)
		return err
	case "delete":
		return s.Delete(ctx, args[0])
	case "wal-push":
		return s.PutOnce(ctx, path.Join(WALDir, filepath.Base(args[0])), args[0])
	case "wal-fetch":
		return fetch(ctx, s, path.Join(WALDir, args[0]), args[1])
	default:
		objects, err := s.List(ctx, args[0])
		if err != nil {
			return err
		}
		for _, o := range objects {
			if _, err := fmt.Fprintf(stdout, "%s\t%d\t%s\n", o.Key, o.Size, o.LastModified.UTC().Format("2006-01-02T15:04:05Z")); err != nil {
				return err
			}
		}
		return nil
	}
}

// walCheck checks that the archive's WAL directory holds every segment a
// restore from the segment from needs, along the timeline named in tl (or
// the newest whose history the archive holds and which follows from's
// timeline), up to the last it holds on that way, which it prints. A gap
// is a *wal.MissingError naming the first missing segment.
func walCheck(ctx context.Context, s *Store, from string, tl []string, stdout io.Writer) error {
	start, ok := wal.ParseSegment(from, wal.DefaultSegmentSize)
	if !ok {
		return fmt.Errorf("%q is not a WAL segment's name", from)
	}
	objects, err := s.List(ctx, WALDir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(objects))
	histories := map[uint32]wal.History{start.Timeline: {Timeline: start.Timeline}}
	for _, o := range objects {
		name := path.Base(o.Key)
		names = append(names, name)
		if t, ok := wal.ParseHistoryName(name); ok && t > start.Timeline {
			h, err := readHistory(ctx, s, t)
			if err != nil {
				return err
			}
			histories[t] = h
		}
	}
	target := start.Timeline
	if len(tl) == 1 {
		n, err := strconv.ParseUint(tl[0], 16, 32)
		if err != nil || histories[uint32(n)].Timeline != uint32(n) {
			return fmt.Errorf("timeline %q: the archive holds no history of it", tl[0])
		}
		target = uint32(n)
	} else {
		for t, h := range histories {
			if t > target && h.Follows(start.Timeline) {
				target = t
			}
		}
	}
	h := histories[target]
	if !h.Follows(start.Timeline) {
		return fmt.Errorf("timeline %X does not come from timeline %X, the base backup's", target, start.Timeline)
	}
	last, err := wal.NewArchive(names, wal.DefaultSegmentSize).Chain(h, start.No)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "timeline %X: %s to %s\n", target, from, last.Name(wal.DefaultSegmentSize))
	return err
}

// walPrune deletes from the archive's WAL directory what no base backup
// whose WAL begins in the segment first, or later, needs (wal.Prunable),
// in the order of their names, and says how many.
func walPrune(ctx context.Context, s *Store, first string, stdout io.Writer) error {
	seg, ok := wal.ParseSegment(first, wal.DefaultSegmentSize)
	if !ok {
		return fmt.Errorf("%q is not a WAL segment's name", first)
	}
	objects, err := s.List(ctx, WALDir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(objects))
	for _, o := range objects {
		names = append(names, path.Base(o.Key))
	}
	prunable := wal.Prunable(names, []uint64{seg.No}, wal.DefaultSegmentSize)
	sort.Strings(prunable)
	for _, n := range prunable {
		if err := s.Delete(ctx, path.Join(WALDir, n)); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "deleted %d files before %s\n", len(prunable), first)
	return err
}

// readHistory reads timeline tl's history file from the archive.
func readHistory(ctx context.Context, s *Store, tl uint32) (wal.History, error) {
	r, err := s.Get(ctx, path.Join(WALDir, wal.HistoryName(tl)))
	if err != nil {
		return wal.History{}, err
	}
	defer r.Close()
	text, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return wal.History{}, err
	}
	return wal.ParseHistory(tl, string(text))
}

// recordArchiveFailure writes err to file (through a temporary name, so
// that a reader never sees half of it), or removes file when err is nil.
func recordArchiveFailure(file string, err error, stderr io.Writer) {
	if err == nil {
		if rerr := os.Remove(file); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			fmt.Fprintf(stderr, "controller objectstore wal-push: %v\n", rerr)
		}
		return
	}
	tmp := file + ".partial"
	if werr := os.WriteFile(tmp, []byte(err.Error()), 0o600); werr != nil {
		fmt.Fprintf(stderr, "controller objectstore wal-push: %v\n", werr)
		return
	}
	if rerr := os.Rename(tmp, file); rerr != nil {
		fmt.Fprintf(stderr, "controller objectstore wal-push: %v\n", rerr)
	}
}

// putOutput runs argv and writes its standard output to key, then prints
// its size. A command that fails ends the stream with its error, on which
// the upload is abandoned (an unfinished multipart upload is aborted): key
// never holds the output of a command that did not succeed. An upload that
// fails closes the command's output, so it stops. With base, the output
// is a base backup's tar stream, read as it passes (baseBackupReader):
// one that is not is abandoned too, and the WAL range is printed after
// the size.
func putOutput(ctx context.Context, s *Store, key string, argv []string, base func(io.Reader) *baseBackupReader, stdout, stderr io.Writer) error {
	pr, pw := io.Pipe()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = pw, stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	// failed holds the command's error before the stream ends with it, so
	// that an upload that fails can tell whether the command failed first.
	var failed atomic.Pointer[error]
	ended := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%s: %w", argv[0], err)
			failed.Store(&err)
			pw.CloseWithError(err)
		} else {
			pw.Close()
		}
		ended <- err
	}()
	counted := &countingReader{r: pr}
	var upload io.Reader = counted
	var br *baseBackupReader
	if base != nil {
		br = base(counted)
		upload = br
	}
	putErr := s.Put(ctx, key, upload, -1)
	if putErr != nil && failed.Load() == nil {
		// The store failed first: the command's output goes nowhere, and
		// its error (a broken pipe) is not the cause.
		pr.CloseWithError(putErr)
		<-ended
		return putErr
	}
	if cmdErr := <-ended; cmdErr != nil {
		return cmdErr
	}
	if putErr != nil {
		return putErr
	}
	if br != nil {
		_, err := fmt.Fprintf(stdout, "size=%d %s\n", counted.n, br.base)
		return err
	}
	_, err := fmt.Fprintf(stdout, "size=%d\n", counted.n)
	return err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fetch writes key to file through a temporary name beside it: PostgreSQL
// never sees half a segment under the name it asked for.
func fetch(ctx context.Context, s *Store, key, file string) error {
	r, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := file + ".dbc-partial"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s to %s: %w", key, file, err)
	}
	return nil
}
