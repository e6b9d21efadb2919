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

// expectedSeconds is how long each parallel test took in a CI run, less
// its wait for a turn (a new machine's .ci/run at 3bb95d7, its real-node
// stage with three tests at once; a test added since, from its run
// beside two others). Only the order of turns depends on it:
// a test missing here takes defaultSeconds, and a figure gone stale costs
// time, never a result.
var expectedSeconds = map[string]int{
	"TestPostgreSQLTLS": 334,
	"TestMariaDBTLS":    290,
	"TestMySQLTLS":      273,
	"TestMySQLDivergenceIsSetAsideAndReported":                        210,
	"TestMySQLReplicationScaling":                                     202,
	"TestServersReachedThroughTheAPIServer":                           192,
	"TestMySQLReplication":                                            175,
	"TestMariaDBDivergenceIsSetAsideAndReported":                      170,
	"TestDivergedReplicaIsRewound":                                    159,
	"TestReplicationFailoverAndSwitchover":                            142,
	"TestMariaDBReplicationScaling":                                   140,
	"TestReplicationScaling":                                          136,
	"TestPostgreSQLServesThroughTheSecretURI":                         133,
	"TestPostgreSQLMajorUpgradeOfAReplicatedDatabase":                 127,
	"TestImageThatCannotBePulledWarnsOnce":                            123,
	"TestPointInTimeRestore":                                          121,
	"TestParameters":                                                  119,
	"TestFirstInitSlowerThanLivenessCompletes":                        113,
	"TestOneCrashIsARestartAndRepeatedOnesALoop":                      113,
	"TestMariaDBReplication":                                          110,
	"TestPrimaryHandoverAndDrain":                                     109,
	"TestPostgreSQLTLSFromTheUsersSecret":                             107,
	"TestReplicationHungPrimaryIsNotPromotedBeside":                   102,
	"TestPostgreSQLMajorUpgradeInPlace":                               101,
	"TestMariaDBSeriesUpgradeInPlace":                                 96,
	"TestPostgreSQLCustomQueries":                                     94,
	"TestReplicaWhoseDataCannotStartIsSeededAgain":                    92,
	"TestFailoverCalledOffWhenTheOldPrimaryIsBackAhead":               91,
	"TestContinuousArchiving/the_store_stopped,_then_back":            90,
	"TestBackupDeleteAndRestore/mysql_to_an_object_store":             89,
	"TestContinuousArchiving/across_a_failover":                       87,
	"TestReplicationRollingImageChange":                               82,
	"TestBackupDeleteAndRestore/postgresql":                           76,
	"TestMySQLParameters":                                             67,
	"TestMySQLRequiredCommitsAndACloneWaitingForEachOtherAreReported": 66,
	"TestMySQLSemiSynchronousLosesNoAcknowledgedWrite":                60,
	"TestContinuousArchiving/refused,_then_mended":                    47,
	"TestMySQLOnMariaDB":                                              46,
	"TestMySQLServes":                                                 46,
	"TestPostgreSQLMonitoring":                                        46,
	"TestDriftRepairAndRolloutRestartKeepServing":                     42,
	"TestRowsSurvivePodDeletionAndScaleToZero":                        42,
	"TestMySQLMonitoring":                                             39,
	"TestPostgreSQLMajorUpgradeThatFailsKeepsTheData":                 39,
	"TestContinuousArchiving/no_Secret":                               31,
	"TestContinuousArchiving/archives":                                30,
	"TestMariaDBMonitoring":                                           29,
	"TestServerThatCannotStartIsNeverRunning":                         29,
	"TestRetainDeleteAndRecreateKeepsCredentials":                     27,
	"TestAlertsOnALiveCluster":                                        20,
	"TestPodRunsAsTheControllerBuildsIt":                              14,
	"TestCommandsServedInProcessAreKubectls":                          10,
	"TestToolsReachTheObjectStore":                                    3,
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
