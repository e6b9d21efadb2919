package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// LabelVolume marks the backup volume ("backups"), and LabelBackup the Job
// of a DatabaseBackup and its pods (the DatabaseBackup's name).
const (
	LabelVolume  = "dbcontroller.io/volume"
	VolumeBackup = "backups"
	LabelBackup  = "dbcontroller.io/backup"
)

// BackupClaimName is the name of the backup volume's claim.
func BackupClaimName(db *dbv1alpha1.Database) string { return db.Name + "-backups" }

// BackupLabels are the labels of the objects of the Database named
// database that belong to its backups: its DatabaseBackups, their Jobs and
// the backup volume. They leave out LabelName, so that the Database's
// selector (and its Services) never match them.
func BackupLabels(database string) map[string]string {
	return map[string]string{LabelInstance: database, LabelManagedBy: ManagedBy}
}

// FinalBackupName is the name of the backup taken before db is deleted:
// one per Database, and a later Database of the same name gets another.
func FinalBackupName(db *dbv1alpha1.Database) string {
	uid := string(db.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return db.Name + "-final-" + uid
}

// ScheduledBackupName is the name of the scheduled backup of the Database
// named database for the schedule's tick: one per tick.
func ScheduledBackupName(database string, tick time.Time) string {
	return database + "-" + tick.UTC().Format("200601021504")
}

// BackupFilePath is where a backup's file is on the backup volume.
func BackupFilePath(backup, extension string) string { return backup + "." + extension }

// BackupJobName is the name of the Job that takes a backup: the backup's
// own, when it fits a Job's 63 characters (see jobName).
func BackupJobName(backup string) string { return jobName(backup, "") }

// BackupDeleteJobName is the name of the Job that deletes a backup's file.
func BackupDeleteJobName(backup string) string { return jobName(backup, "-delete") }

// BackupVerifyJobName is the name of the Job that proves a base backup
// restorable.
func BackupVerifyJobName(backup string) string { return jobName(backup, "-verify") }

// jobName is backup+suffix when it fits a DNS label of 63 characters, the
// longest a Job's name may be; else backup cut short, a hash of the whole
// of it, and suffix, so that two long names stay apart.
func jobName(backup, suffix string) string {
	if name := backup + suffix; len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(backup))
	return backup[:63-len(suffix)-9] + "-" + hex.EncodeToString(sum[:])[:8] + suffix
}

// BackupSourcePod is the pod a backup of db dumps: of a replicated
// Database, the first replica that streams from the primary as the status
// last reported it, so that the primary is not loaded, or else the
// primary; otherwise pod 0.
func BackupSourcePod(db *dbv1alpha1.Database) string {
	if rs := db.Status.Replication; rs != nil {
		for _, i := range rs.Instances {
			if i.Role == dbv1alpha1.RoleReplica && i.Streaming {
				return i.Name
			}
		}
		if rs.Primary != "" {
			return rs.Primary
		}
	}
	return PodName(db, 0)
}

// MajorUpgradeBackupName is the name of the backup taken before the data
// of the Database named database is upgraded in place to version to, for
// the Database's generation that asked for it: one per attempt, and the
// same for every pass of one.
func MajorUpgradeBackupName(database, to string, generation int64) string {
	return database + "-before-" + strings.ReplaceAll(to, ".", "-") + "-" + strconv.FormatInt(generation, 10)
}
