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

// archiverQuery reads what a server says of its WAL archiving, and the
// words of the archive command's last failure, which it writes to
// builder.ArchiveFailureFile in the data directory (NULL when absent).
var archiverQuery = `SELECT COALESCE(last_archived_wal, ''), last_archived_time, COALESCE(last_failed_wal, ''), last_failed_time,
  COALESCE(pg_read_file('` + builder.ArchiveFailureFile + `', 0, 2048, true), '')
FROM pg_stat_archiver`

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
	if err := conn.QueryRow(ctx, archiverQuery).Scan(&st.LastArchivedWAL, &archived, &st.LastFailedWAL, &failed, &st.LastFailure); err != nil {
		return nil, fmt.Errorf("asking %s how its archiving goes: %w", host, err)
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
