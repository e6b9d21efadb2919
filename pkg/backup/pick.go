package backup

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/wal"
)

// ErrNoBase is PickBase's error when there is no base backup to pick
// from at all: one may yet complete.
var ErrNoBase = errors.New("no base backup")

// Base is b's base backup as a restore needs it, ok false when b is not a
// Completed base backup that reported its WAL range.
func Base(b *dbv1alpha1.DatabaseBackup) (wal.Base, bool) {
	st := b.Status
	if st.Phase != dbv1alpha1.BackupCompleted || st.Method != dbv1alpha1.BackupMethodBaseBackup || st.BaseBackup == nil ||
		st.CompletionTime == nil || st.BaseBackup.Timeline <= 0 || st.BaseBackup.Timeline > 0xFFFFFFFF {
		return wal.Base{}, false
	}
	start, err1 := wal.ParseLSN(st.BaseBackup.StartLSN)
	stop, err2 := wal.ParseLSN(st.BaseBackup.StopLSN)
	if err1 != nil || err2 != nil {
		return wal.Base{}, false
	}
	// The copy was consistent by the time its Job ended, if not before:
	// a restore to a time starts from a copy that surely was.
	return wal.Base{Name: b.Name, Timeline: uint32(st.BaseBackup.Timeline), Start: start, Stop: stop, StopTime: st.CompletionTime.Time}, true
}

// PickBase picks, of the DatabaseBackups of one Database name, the base
// backup a restore to target starts from. Of the Databases made under the
// name, it takes the one with the newest base backup (its archive); of its
// base backups, the newest that was consistent before the target: that
// completed before target.Time, or stopped at or before target.LSN, or,
// for the latest point, the newest. It says, in words a person can act
// on, why none fits; ErrNoBase when there is none at all.
func PickBase(backups []*dbv1alpha1.DatabaseBackup, target wal.Target) (*dbv1alpha1.DatabaseBackup, error) {
	type candidate struct {
		b    *dbv1alpha1.DatabaseBackup
		base wal.Base
	}
	var all []candidate
	for _, b := range backups {
		if base, ok := Base(b); ok && b.DeletionTimestamp == nil {
			all = append(all, candidate{b, base})
		}
	}
	if len(all) == 0 {
		return nil, ErrNoBase
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].base.StopTime.Equal(all[j].base.StopTime) {
			return all[i].base.StopTime.After(all[j].base.StopTime)
		}
		return all[i].b.Name > all[j].b.Name
	})
	archive := all[0].b.Status.BaseBackup.Archive
	n := 0
	for _, c := range all {
		if c.b.Status.BaseBackup.Archive != archive {
			continue
		}
		n++
		if target.Time != nil && !c.base.StopTime.Before(*target.Time) || target.LSN != nil && c.base.Stop > *target.LSN {
			continue
		}
		return c.b, nil
	}
	return nil, fmt.Errorf("none of the %d base backups of the archive %s was consistent before %s: the archive cannot restore to a point before its oldest base backup", n, archive, target)
}

// WALKeptFrom is the first WAL segment a kept base backup of db needs:
// the one the WAL of the oldest of its Completed base backups in its
// archive begins in (backups may hold others'); "" when there is none,
// and nothing may be pruned.
func WALKeptFrom(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) string {
	b, oldest := ownBase(db, backups, startsBefore)
	if b == nil {
		return ""
	}
	return wal.SegmentOf(oldest.Timeline, oldest.Start, wal.DefaultSegmentSize).Name(wal.DefaultSegmentSize)
}

// RecoverableFrom is the first point a point-in-time restore of db's
// archive can reach: when the oldest of its Completed base backups in it
// was consistent. Nil when there is none.
func RecoverableFrom(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup) *metav1.Time {
	b, oldest := ownBase(db, backups, startsBefore)
	if b == nil {
		return nil
	}
	t := metav1.NewTime(oldest.StopTime)
	return &t
}

// BaseFile is where in its archive the Completed base backup b's file is
// (its key under BaseBackupStatus.Archive), and the WAL segment its WAL
// begins in: what a restore of it fetches. ok is false when b is not a
// Completed base backup with its WAL range, or its file is not in its
// archive.
func BaseFile(b *dbv1alpha1.DatabaseBackup) (key, from string, ok bool) {
	base, ok := Base(b)
	if !ok {
		return "", "", false
	}
	key, ok = strings.CutPrefix(b.Status.Path, b.Status.BaseBackup.Archive+"/")
	return key, wal.SegmentOf(base.Timeline, base.Start, wal.DefaultSegmentSize).Name(wal.DefaultSegmentSize), ok
}

// startsBefore orders base backups by where their WAL begins.
func startsBefore(a, b wal.Base) bool { return a.Start < b.Start }

// ownBase is, of db's Completed base backups in its own archive that are
// not being deleted, the first by before (startsBefore: the oldest), and
// its base; nil when there is none.
func ownBase(db *dbv1alpha1.Database, backups []*dbv1alpha1.DatabaseBackup, before func(a, b wal.Base) bool) (*dbv1alpha1.DatabaseBackup, wal.Base) {
	archive := builder.ArchiveDir(db)
	var first *dbv1alpha1.DatabaseBackup
	var firstBase wal.Base
	for _, b := range backups {
		base, ok := Base(b)
		if !ok || b.DeletionTimestamp != nil || b.Status.BaseBackup.Archive != archive {
			continue
		}
		if first == nil || before(base, firstBase) {
			first, firstBase = b, base
		}
	}
	return first, firstBase
}
