//go:build promtool

// Package monitoring tests artifacts/monitoring with promtool, the
// Prometheus project's rule checker and evaluator (make test-monitoring
// puts it at _output/bin/promtool): the alerts parse and fire on the
// series of their unit tests (alerts_test.yaml), every alert has a test,
// and every query of the dashboard parses.
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	root     = filepath.Join("..", "..")
	dir      = filepath.Join(root, "artifacts", "monitoring")
	promtool = filepath.Join(root, "_output", "bin", "promtool")
)

// ruleGroups are the groups of prometheusrule.yaml, as a rule file holds them.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert,omitempty"`
			Record string `json:"record,omitempty"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// run runs promtool with args and fails the test with its output if it fails.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(promtool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeRules writes prometheusrule.yaml's spec into dir as rules.yaml, the
// rule file alerts_test.yaml names, and returns its groups.
func writeRules(t *testing.T, into string) ruleGroups {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: kind %q, %v", rule.Kind, err)
	}
	var groups ruleGroups
	if err := json.Unmarshal(rule.Spec, &groups); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.JSONToYAML(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(into, "rules.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return groups
}

// The alerts parse, and each fires as its tests say, and only then.
func TestAlerts(t *testing.T) {
	tmp := t.TempDir()
	groups := writeRules(t, tmp)
	t.Log(strings.TrimSpace(run(t, "check", "rules", filepath.Join(tmp, "rules.yaml"))))
	tests, err := os.ReadFile(filepath.Join(dir, "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(run(t, "test", "rules", filepath.Join(tmp, "alerts_test.yaml"))))

	// Every alert is tested firing.
	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatal(err)
	}
	var fired []string
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired = append(fired, a.Alertname)
			}
		}
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !slices.Contains(fired, r.Alert) {
				t.Errorf("alert %s has no test in alerts_test.yaml that sees it fire", r.Alert)
			}
		}
	}
}

// Every query of the dashboard parses: each is checked as a recording
// rule, with the dashboard's variables given values.
func TestDashboardQueries(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$namespace", "shop", "$database", "orders", "$__rate_interval", "5m")
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	n := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			n++
			expr, err := json.Marshal(vars.Replace(target.Expr))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&rules, "  - record: dashboard:query_%d\n    expr: %s\n", n, expr)
		}
	}
	if n == 0 {
		t.Fatal("the dashboard has no query")
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(run(t, "check", "rules", file)))
}
