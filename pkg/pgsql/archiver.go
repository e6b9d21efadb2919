package pgsql

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// archiverQuery reads what a server says of its WAL archiving, the words
// of the archive command's last failure, which it writes to
// builder.ArchiveFailureFile in the data directory (NULL when absent), and
// whether the server, out of recovery, has not read its configuration again
// since it started (see wakeQuery).
var archiverQuery = `SELECT COALESCE(last_archived_wal, ''), last_archived_time, COALESCE(last_failed_wal, ''), last_failed_time,
  COALESCE(pg_read_file('` + builder.ArchiveFailureFile + `', 0, 2048, true), ''),
  NOT pg_is_in_recovery() AND pg_conf_load_time() <= pg_postmaster_start_time()
FROM pg_stat_archiver`

// wakeQuery wakes the checkpointer, which is the process that forces a WAL
// switch once archive_timeout has passed. It starts while the server is
// still recovering (even from a clean shutdown), and then sleeps for
// checkpoint_timeout (5 minutes) before it first looks at archive_timeout:
// without a wake-up, a server's first partial WAL file after each start
// waits up to checkpoint_timeout, whatever archiveTimeoutSeconds says. A
// reload wakes it, and it honours archive_timeout from then on; it is asked
// once per start, as pg_conf_load_time then passes the start time.
const wakeQuery = `SELECT pg_reload_conf()`

// Archiver asks the primary at host:port how its WAL archiving goes.
func Archiver(ctx context.Context, host string, port int32, cred ha.Credentials) (*dbv1alpha1.ArchiveStatus, error) {
	return archiver(ctx, dial, host, port, cred)
}

func archiver(ctx context.Context, d dialer, host string, port int32, cred ha.Credentials) (*dbv1alpha1.ArchiveStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := d(ctx, host, port, cred)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var st dbv1alpha1.ArchiveStatus
	var archived, failed *time.Time
	var asleep bool
	if err := conn.QueryRow(ctx, archiverQuery).Scan(&st.LastArchivedWAL, &archived, &st.LastFailedWAL, &failed, &st.LastFailure, &asleep); err != nil {
		return nil, fmt.Errorf("asking %s how its archiving goes: %w", host, err)
	}
	if asleep {
		if _, err := conn.Exec(ctx, wakeQuery); err != nil {
			return nil, fmt.Errorf("asking %s to reload its configuration, which makes it honour archive_timeout: %w", host, err)
		}
	}
	st.LastArchivedTime, st.LastFailedTime = metaTime(archived), metaTime(failed)
	st.LastFailure = strings.TrimSpace(st.LastFailure)
	return &st, nil
}

// metaTime is t to the second, as the API keeps it.
func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}
