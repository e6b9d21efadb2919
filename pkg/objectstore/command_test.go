package objectstore

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Command's exit codes and words for what it can tell before it reaches a
// store: a usage error, a store it cannot name, a CA it cannot read. The
// end-to-end test TestLocalObjectStore runs the built binary against the
// local cluster's store (put, get, list, and a missing key's exit 3).
func TestCommand(t *testing.T) {
	full := map[string]string{
		EnvEndpoint: "http://127.0.0.1:7070", EnvBucket: "backups", EnvAccessKeyID: "id", EnvSecretAccessKey: "secret",
	}
	with := func(k, v string) map[string]string {
		env := map[string]string{}
		for key, val := range full {
			env[key] = val
		}
		env[k] = v
		return env
	}
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		wantCode  int
		wantWords string
	}{
		{"no verb", nil, full, ExitUsage, "usage: controller objectstore put KEY"},
		{"no key", []string{"get"}, full, ExitUsage, "usage:"},
		{"a verb it lacks", []string{"remove", "a"}, full, ExitUsage, "usage:"},
		{"too many", []string{"get", "a", "b"}, full, ExitUsage, "usage:"},
		{"no bucket", []string{"list", "x"}, with(EnvBucket, ""), ExitFailed, "controller objectstore list: object store: no bucket"},
		{"no secret", []string{"put", "x"}, with(EnvSecretAccessKey, ""), ExitFailed, "no access key id or secret access key"},
		{"a CA file it cannot read", []string{"get", "x"}, with(EnvCAFile, "/nonexistent/ca.crt"), ExitFailed, "object store CA: open /nonexistent/ca.crt"},
		{"a key that climbs out", []string{"get", "../other/x"}, full, ExitFailed, `object key "../other/x": not a key`},
		{"wal-fetch without a path", []string{"wal-fetch", "000000010000000000000001"}, full, ExitUsage, "usage:"},
		{"wal-check without a segment", []string{"wal-check"}, full, ExitUsage, "usage:"},
		{"wal-check with three arguments", []string{"wal-check", "000000010000000000000001", "1", "2"}, full, ExitUsage, "usage:"},
		{"put-output without a command", []string{"put-output", "a"}, full, ExitUsage, "usage:"},
		{"put-output with no bucket", []string{"put-output", "a", "true"}, with(EnvBucket, ""), ExitFailed, "controller objectstore put-output: object store: no bucket"},
		{"wal-push with two paths", []string{"wal-push", "a", "b"}, full, ExitUsage, "usage:"},
		// A restore that cannot reach its store must stop, not end early
		// and promote without the WAL it could not read.
		{"wal-fetch with no bucket", []string{"wal-fetch", "000000010000000000000001", "pg_wal/RECOVERYXLOG"}, with(EnvBucket, ""),
			ExitAbortRecovery, "controller objectstore wal-fetch: object store: no bucket"},
		{"wal-push with no secret", []string{"wal-push", "pg_wal/000000010000000000000001"}, with(EnvSecretAccessKey, ""),
			ExitFailed, "no access key id or secret access key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Command(context.Background(), tc.args, func(k string) string { return tc.env[k] }, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantWords) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tc.wantCode, tc.wantWords)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// wal-push writes why it failed to $DBC_ARCHIVE_FAILURE_FILE, for the
// controller to read, and a success removes it.
func TestWALPushRecordsItsFailure(t *testing.T) {
	file := t.TempDir() + "/dbc-archive-failure"
	env := map[string]string{EnvEndpoint: "http://127.0.0.1:7070", EnvBucket: "backups", EnvArchiveFailureFile: file}
	var stdout, stderr bytes.Buffer
	if code := Command(context.Background(), []string{"wal-push", "pg_wal/000000010000000000000001"}, func(k string) string { return env[k] },
		strings.NewReader(""), &stdout, &stderr); code != ExitFailed {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailed, stderr.String())
	}
	got, err := os.ReadFile(file)
	if err != nil || string(got) != "object store: no access key id or secret access key" {
		t.Fatalf("the failure file holds %q (%v)", got, err)
	}
	recordArchiveFailure(file, nil, &stderr)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("after a success the failure file is still there: %v", err)
	}
}
