package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
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

// WALDir is the directory, under the Database's, of its archived WAL.
const WALDir = "wal"

const usage = `usage: controller objectstore put KEY   (writes standard input to KEY)
       controller objectstore get KEY   (writes KEY to standard output; exit 3 when the store does not hold it)
       controller objectstore list DIR  (prints each key under DIR, its size and time, one per line)
       controller objectstore delete KEY (a key the store does not hold is no error)
       controller objectstore wal-push PATH       (archive_command: the file PATH to wal/NAME, NAME being PATH's
                                                   last part, unless the store holds it; never over other bytes)
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
	arity := map[string]int{"put": 1, "get": 1, "list": 1, "delete": 1, "wal-push": 1, "wal-fetch": 2}
	if len(args) == 0 || arity[args[0]] == 0 || len(args)-1 != arity[args[0]] {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	verb := args[0]
	cfg, err := ConfigFromEnv(getenv)
	if err == nil {
		var s *Store
		if s, err = New(cfg); err == nil {
			err = run(ctx, s, verb, args[1:], stdin, stdout)
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

func run(ctx context.Context, s *Store, verb string, args []string, stdin io.Reader, stdout io.Writer) error {
	switch verb {
	case "put":
		return s.Put(ctx, args[0], stdin, -1)
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
