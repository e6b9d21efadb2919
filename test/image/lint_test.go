package image

import (
	"bytes"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// The Dockerfile passes BuildKit's own checks (the ones `docker build
// --check` runs while parsing instructions), so a build prints no warnings.
func TestDockerfileLint(t *testing.T) {
	res, err := parser.Parse(bytes.NewReader(readRepoFile(t, "Dockerfile")))
	if err != nil {
		t.Fatal(err)
	}
	lint := linter.New(&linter.Config{
		Warn: func(rule, description, url, msg string, location []parser.Range) {
			line := 0
			if len(location) > 0 {
				line = location[0].Start.Line
			}
			t.Errorf("Dockerfile:%d: %s: %s", line, rule, msg)
		},
	})
	if _, _, err := instructions.Parse(res.AST, lint); err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
}
