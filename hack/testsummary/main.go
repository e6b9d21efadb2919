// Command testsummary reads `go test -json` on its standard input, writes
// the tests' text (what `go test -v` prints) to a log file, prints the
// lines worth following live (runs, results, the tests' own log lines),
// and ends with the last messages of every test that failed (their first
// lines: a dump that follows one stays in the log), each under its name,
// so that the last lines of a long run say why it failed.
//
// Usage: go test -json ... | go run ./hack/testsummary LOG
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// event is the part of a test2json event this program reads.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// followed are the lines printed as they come: the ones `make test-e2e`
// printed before it read JSON.
var followed = regexp.MustCompile(`^(=== RUN|--- |PASS|FAIL|ok|panic|\s+\S+_test\.go)`)

// message is the first line of a test's message (t.Log, t.Error, t.Fatal):
// its file and line. What follows it on other lines (a namespace's dump,
// a controller's log) stays in the log file.
var message = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// perTest is how many of a failed test's last lines the summary keeps, and
// lineLimit how long each may be: the summary is read at the end of a
// long log, often as its last few lines only. A real-node test that
// failed ends with its namespace's dump (one line here), up to four
// lines of its servers' logs and eight events: sixteen keep a few of
// its own messages before them.
const (
	perTest   = 16
	lineLimit = 400
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ... | testsummary LOG")
		os.Exit(2)
	}
	log, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer log.Close()
	if err := summarize(os.Stdin, log, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// summarize copies the run's text to log, the followed lines to out, and
// then the failed tests' messages to out.
func summarize(in io.Reader, log, out io.Writer) error {
	type test struct{ pkg, name string }
	var (
		lines  = map[test][]string{}
		failed []test
	)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event: the build's own output, as go test printed it.
			line := sc.Text() + "\n"
			fmt.Fprint(log, line)
			fmt.Fprint(out, line)
			continue
		}
		if e.Output != "" {
			fmt.Fprint(log, e.Output)
			if followed.MatchString(e.Output) {
				fmt.Fprint(out, e.Output)
			}
			if own := strings.TrimRight(e.Output, "\n"); e.Test != "" && message.MatchString(own) {
				k := test{e.Package, e.Test}
				lines[k] = append(lines[k], own)
			}
		}
		if e.Action == "fail" {
			failed = append(failed, test{e.Package, e.Test})
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(failed) == 0 {
		return nil
	}
	fmt.Fprintln(out, "--- the failed tests' last messages:")
	for _, f := range failed {
		msgs := lines[f]
		if f.name == "" {
			fmt.Fprintf(out, "FAIL %s\n", f.pkg)
			continue
		}
		if len(msgs) == 0 {
			// A parent that failed through its subtests: they are named.
			continue
		}
		fmt.Fprintf(out, "FAIL %s\n", f.name)
		if len(msgs) > perTest {
			fmt.Fprintf(out, "    (%d earlier lines in the log)\n", len(msgs)-perTest)
			msgs = msgs[len(msgs)-perTest:]
		}
		for _, m := range msgs {
			if len(m) > lineLimit {
				m = m[:lineLimit] + " …"
			}
			fmt.Fprintln(out, m)
		}
	}
	return nil
}
