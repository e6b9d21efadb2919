package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	var in bytes.Buffer
	emit := func(action, test, output string) {
		b, err := json.Marshal(event{Action: action, Package: "example/e2e", Test: test, Output: output})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	in.WriteString("# a build line, not JSON\n")
	emit("output", "", "[e2e-node 02:05:26] building the controller\n")
	emit("run", "TestA", "")
	emit("output", "TestA", "=== RUN   TestA\n")
	emit("output", "TestA/sub", "=== RUN   TestA/sub\n")
	for i := 1; i <= perTest+2; i++ {
		emit("output", "TestA/sub", fmt.Sprintf("    a_test.go:%d: step %d\n", i, i))
	}
	emit("output", "TestA/sub", "        a continuation line\n")
	emit("output", "TestA/sub", "--- FAIL: TestA/sub (1.00s)\n")
	emit("fail", "TestA/sub", "")
	emit("output", "TestA", "--- FAIL: TestA (1.00s)\n")
	emit("fail", "TestA", "")
	emit("output", "TestB", "    b_test.go:3: "+strings.Repeat("x", 500)+"\n")
	emit("output", "TestB", "--- FAIL: TestB (0.00s)\n")
	emit("fail", "TestB", "")
	emit("output", "TestC", "    c_test.go:1: fine\n")
	emit("output", "TestC", "--- PASS: TestC (0.00s)\n")
	emit("pass", "TestC", "")
	emit("output", "", "FAIL\n")
	emit("fail", "", "")

	var log, out bytes.Buffer
	if err := summarize(&in, &log, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log.String(), "# a build line, not JSON\n[e2e-node 02:05:26] building the controller\n=== RUN   TestA\n") ||
		!strings.Contains(log.String(), "        a continuation line\n") {
		t.Errorf("the log holds\n%s\nwant every line of output, as go test -v prints it", log.String())
	}
	summary := out.String()[strings.Index(out.String(), "--- the failed tests' last messages:\n"):]
	want := "--- the failed tests' last messages:\n" +
		"FAIL TestA/sub\n" +
		"    (2 earlier lines in the log)\n" +
		steps(3, perTest+2) +
		"FAIL TestB\n" +
		"    b_test.go:3: " + strings.Repeat("x", lineLimit-len("    b_test.go:3: ")) + " …\n" +
		"FAIL example/e2e\n"
	if summary != want {
		t.Errorf("summary\n%s\nwant\n%s", summary, want)
	}
	if followed := out.String()[:len(out.String())-len(summary)]; strings.Contains(followed, "a continuation line") ||
		!strings.Contains(followed, "    c_test.go:1: fine\n") || !strings.Contains(followed, "--- PASS: TestC") {
		t.Errorf("followed lines\n%s\nwant runs, results and log lines, without continuations", followed)
	}
}

// steps is the lines "a_test.go:i: step i" for i from first to last.
func steps(first, last int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "    a_test.go:%d: step %d\n", i, i)
	}
	return b.String()
}
