//go:build e2e

package realnode

import (
	"flag"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The suite's parallel tests take their turns longest first: Go starts
// the tests that wait for a turn in no set order (about the order they
// are declared in), so a long test that started last ran alone at the end
// while the machine idled (the CI run of 76d66cd: TestMySQLTLS, 433 s,
// started 35 minutes in, and its last 4 minutes, with one test left, had
// the cores idle over half the time). TestMain gives Go's -parallel to
// turns and raises Go's own limit past the count of tests, so that every
// parallel test reaches the queue, which lets in -parallel at once, the
// longest waiting first.
var turns = &queue{gather: 2 * time.Second}

// expectedSeconds is how long each parallel test took in a CI run (a
// clean clone's .ci/run at 76d66cd, its real-node stage with three tests
// at once). Only the order of turns depends on it: a test missing here
// takes defaultSeconds, and a figure gone stale costs time, never a
// result.
var expectedSeconds = map[string]int{
	"TestMySQLTLS":                                                    433,
	"TestPostgreSQLTLS":                                               369,
	"TestMySQLReplication":                                            347,
	"TestMariaDBTLS":                                                  284,
	"TestMySQLReplicationScaling":                                     275,
	"TestServersReachedThroughTheAPIServer":                           262,
	"TestParameters":                                                  239,
	"TestPointInTimeRestore":                                          237,
	"TestMySQLDivergenceIsSetAsideAndReported":                        236,
	"TestPostgreSQLMajorUpgradeInPlace":                               209,
	"TestMariaDBReplication":                                          201,
	"TestMariaDBSeriesUpgradeInPlace":                                 198,
	"TestDivergedReplicaIsRewound":                                    192,
	"TestMariaDBDivergenceIsSetAsideAndReported":                      182,
	"TestReplicationScaling":                                          176,
	"TestPostgreSQLMajorUpgradeOfAReplicatedDatabase":                 174,
	"TestReplicationFailoverAndSwitchover":                            167,
	"TestPostgreSQLServesThroughTheSecretURI":                         158,
	"TestMariaDBReplicationScaling":                                   158,
	"TestPrimaryHandoverAndDrain":                                     125,
	"TestContinuousArchiving/across_a_failover":                       125,
	"TestOneCrashIsARestartAndRepeatedOnesALoop":                      124,
	"TestImageThatCannotBePulledWarnsOnce":                            124,
	"TestFirstInitSlowerThanLivenessCompletes":                        119,
	"TestMySQLRequiredCommitsAndACloneWaitingForEachOtherAreReported": 116,
	"TestPostgreSQLTLSFromTheUsersSecret":                             111,
	"TestReplicationHungPrimaryIsNotPromotedBeside":                   110,
	"TestReplicationRollingImageChange":                               108,
	"TestBackupDeleteAndRestore/mysql_to_an_object_store":             104,
	"TestMySQLParameters":                                             101,
	"TestPostgreSQLCustomQueries":                                     100,
	"TestReplicaWhoseDataCannotStartIsSeededAgain":                    99,
	"TestBackupDeleteAndRestore/postgresql":                           99,
	"TestMySQLSemiSynchronousLosesNoAcknowledgedWrite":                98,
	"TestContinuousArchiving/the_store_stopped,_then_back":            91,
	"TestMySQLMonitoring":                                             84,
	"TestPostgreSQLMonitoring":                                        76,
	"TestPostgreSQLMajorUpgradeThatFailsKeepsTheData":                 74,
	"TestMySQLServes":                                                 74,
	"TestRowsSurvivePodDeletionAndScaleToZero":                        71,
	"TestDriftRepairAndRolloutRestartKeepServing":                     67,
	"TestMySQLOnMariaDB":                                              57,
	"TestMariaDBMonitoring":                                           55,
	"TestContinuousArchiving/refused,_then_mended":                    48,
	"TestRetainDeleteAndRecreateKeepsCredentials":                     46,
	"TestContinuousArchiving/archives":                                31,
	"TestContinuousArchiving/no_Secret":                               31,
	"TestPodRunsAsTheControllerBuildsIt":                              21,
	"TestAlertsOnALiveCluster":                                        21,
	"TestServerThatCannotStartIsNeverRunning":                         20,
	"TestToolsReachTheObjectStore":                                    5,
}

const defaultSeconds = 120

// parallel marks t a parallel test and waits for its turn, which ends
// with t (its cleanups first). A test whose subtests are parallel calls
// t.Parallel itself, and its subtests parallel: it would hold a turn its
// subtests wait for.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	seconds, ok := expectedSeconds[t.Name()]
	if !ok {
		seconds = defaultSeconds
	}
	asked := time.Now()
	turns.wait(seconds)
	t.Cleanup(turns.done)
	t.Logf("its turn came %s after it asked (expected to take %d s)", time.Since(asked).Round(time.Second), seconds)
}

// takeParallelFlag gives turns the -parallel the suite was run with, and
// raises Go's own limit, which would otherwise hold the tests back before
// they reach turns. TestMain calls it before m.Run.
func takeParallelFlag() error {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.parallel")
	n, err := strconv.Atoi(f.Value.String())
	if err != nil {
		return err
	}
	turns.mu.Lock()
	turns.free = max(1, n)
	turns.mu.Unlock()
	return f.Value.Set("1000")
}

// queue lets in up to free waiters at once, the longest first. It lets
// no one in until gather has passed since the first arrived: Go releases
// the parallel tests together, and the first to arrive is not the
// longest.
type queue struct {
	mu      sync.Mutex
	free    int
	gather  time.Duration
	opened  bool
	waiting []*waiter
}

type waiter struct {
	seconds int
	in      chan struct{}
}

func (q *queue) wait(seconds int) {
	w := &waiter{seconds: seconds, in: make(chan struct{})}
	q.mu.Lock()
	if !q.opened && len(q.waiting) == 0 {
		time.AfterFunc(q.gather, func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.opened = true
			q.letIn()
		})
	}
	q.waiting = append(q.waiting, w)
	// Stable: of two tests as long, the one that came first.
	sort.SliceStable(q.waiting, func(i, j int) bool { return q.waiting[i].seconds > q.waiting[j].seconds })
	if q.opened {
		q.letIn()
	}
	q.mu.Unlock()
	<-w.in
}

func (q *queue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.free++
	q.letIn()
}

// letIn lets in the longest waiters while a turn is free; q.mu is held.
func (q *queue) letIn() {
	for q.free > 0 && len(q.waiting) > 0 {
		q.free--
		close(q.waiting[0].in)
		q.waiting = q.waiting[1:]
	}
}
