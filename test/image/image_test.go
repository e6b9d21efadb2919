package image

import (
	"bytes"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// instruction is one Dockerfile instruction, flattened from BuildKit's AST.
type instruction struct {
	// Cmd is the instruction in lower case: "from", "run", "copy", ...
	Cmd   string
	Flags []string
	// Args are the instruction's words. For ENV they come in threes (name,
	// value, separator); a shell-form RUN is one string.
	Args []string
	// JSON is true for the exec form (ENTRYPOINT ["/controller"]).
	JSON bool
	Line int
	// Text is the instruction as written, heredoc bodies included.
	Text string
}

func (in instruction) flag(name string) (string, bool) {
	for _, f := range in.Flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

type stage struct {
	Index int
	Base  string // image or earlier stage, ARGs expanded
	Name  string // AS name; "" when unnamed
	Insns []instruction
}

func (s stage) String() string {
	if s.Name != "" {
		return "stage " + strconv.Itoa(s.Index) + " (" + s.Name + ")"
	}
	return "stage " + strconv.Itoa(s.Index)
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.Insns {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

type dockerfile struct {
	// MetaArgs are the ARGs before the first FROM.
	MetaArgs []instruction
	Stages   []stage
}

func (d dockerfile) final() stage { return d.Stages[len(d.Stages)-1] }

// stageRef resolves a FROM base or a COPY --from value to an earlier stage,
// by name or index.
func (d dockerfile) stageRef(ref string, before int) (stage, bool) {
	for _, s := range d.Stages[:before] {
		if (s.Name != "" && strings.EqualFold(s.Name, ref)) || strconv.Itoa(s.Index) == ref {
			return s, true
		}
	}
	return stage{}, false
}

func parseDockerfile(t testing.TB) dockerfile {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(readRepoFile(t, "Dockerfile")))
	if err != nil {
		t.Fatalf("parsing Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}

	var d dockerfile
	metaDefaults := map[string]string{}
	for _, n := range res.AST.Children {
		in := instruction{
			Cmd:   strings.ToLower(n.Value),
			Flags: n.Flags,
			JSON:  n.Attributes["json"],
			Line:  n.StartLine,
			Text:  n.Original,
		}
		for next := n.Next; next != nil; next = next.Next {
			in.Args = append(in.Args, next.Value)
		}
		for _, h := range n.Heredocs {
			in.Text += "\n" + h.Content
		}

		switch {
		case in.Cmd == "from":
			if len(in.Args) == 0 {
				t.Fatalf("Dockerfile:%d: FROM without an image", in.Line)
			}
			s := stage{Index: len(d.Stages), Base: os.Expand(in.Args[0], func(k string) string { return metaDefaults[k] })}
			if len(in.Args) == 3 && strings.EqualFold(in.Args[1], "as") {
				s.Name = in.Args[2]
			}
			s.Insns = append(s.Insns, in)
			d.Stages = append(d.Stages, s)
		case len(d.Stages) == 0:
			if in.Cmd != "arg" {
				t.Fatalf("Dockerfile:%d: %s before the first FROM", in.Line, strings.ToUpper(in.Cmd))
			}
			d.MetaArgs = append(d.MetaArgs, in)
			for _, a := range in.Args {
				if k, v, ok := strings.Cut(a, "="); ok {
					metaDefaults[k] = strings.Trim(v, `"'`)
				}
			}
		default:
			d.Stages[len(d.Stages)-1].Insns = append(d.Stages[len(d.Stages)-1].Insns, in)
		}
	}
	if len(d.Stages) == 0 {
		t.Fatal("Dockerfile has no FROM")
	}
	return d
}

// imageRepository strips the tag and digest off an image reference:
// gcr.io/distroless/static:nonroot -> gcr.io/distroless/static.
func imageRepository(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

func TestDockerfileIsMultiStage(t *testing.T) {
	d := parseDockerfile(t)
	if len(d.Stages) < 2 {
		t.Fatalf("want a build stage and a runtime stage, found %d FROM", len(d.Stages))
	}
	names := map[string]bool{}
	for _, s := range d.Stages {
		if s.Name == "" {
			continue
		}
		if names[strings.ToLower(s.Name)] {
			t.Errorf("two stages are named %q", s.Name)
		}
		names[strings.ToLower(s.Name)] = true
	}
}

func TestDockerfileRuntimeBaseIsDistrolessStatic(t *testing.T) {
	final := parseDockerfile(t).final()
	repo, tag := imageRepository(final.Base)
	switch {
	case final.Base == "scratch":
	case repo == "gcr.io/distroless/static" || strings.HasPrefix(repo, "gcr.io/distroless/static-"):
		if strings.Contains(tag, "debug") {
			t.Errorf("final base %q is a debug image: it has a busybox shell", final.Base)
		}
	default:
		t.Errorf("final base is %q; want gcr.io/distroless/static (or scratch) for a static binary without a shell", final.Base)
	}
}

func TestDockerfileRuntimeUserIsNonRoot(t *testing.T) {
	final := parseDockerfile(t).final()
	users := final.all("user")
	if len(users) == 0 {
		t.Fatalf("%s has no USER: the image would run as whatever its base says", final)
	}
	last := users[len(users)-1]
	if len(last.Args) != 1 {
		t.Fatalf("Dockerfile:%d: USER takes one argument, got %q", last.Line, last.Args)
	}
	user, group, hasGroup := strings.Cut(last.Args[0], ":")
	// Numeric, because the kubelet can only verify runAsNonRoot against a
	// numeric image user; a name such as "nonroot" fails that check.
	uid, err := strconv.Atoi(user)
	if err != nil {
		t.Fatalf("Dockerfile:%d: USER %q is not numeric: runAsNonRoot cannot check a user name", last.Line, last.Args[0])
	}
	if uid == 0 {
		t.Errorf("Dockerfile:%d: USER %q is root", last.Line, last.Args[0])
	}
	if hasGroup && (group == "0" || group == "root") {
		t.Errorf("Dockerfile:%d: USER %q puts the process in the root group", last.Line, last.Args[0])
	}
}

func TestDockerfileEntrypointIsExecForm(t *testing.T) {
	final := parseDockerfile(t).final()
	eps := final.all("entrypoint")
	if len(eps) == 0 {
		t.Fatalf("%s has no ENTRYPOINT", final)
	}
	ep := eps[len(eps)-1]
	if !ep.JSON {
		t.Errorf("Dockerfile:%d: ENTRYPOINT is shell form; there is no shell in the image, use [\"/controller\"]", ep.Line)
	}
	if !slices.Equal(ep.Args, []string{"/controller"}) {
		t.Errorf("Dockerfile:%d: ENTRYPOINT is %q, want [\"/controller\"]", ep.Line, ep.Args)
	}
}

func TestDockerfileRuntimeStageHasNoShell(t *testing.T) {
	d := parseDockerfile(t)
	final := d.final()
	copiesBinary := false
	for _, in := range final.Insns {
		switch in.Cmd {
		case "run", "shell":
			t.Errorf("Dockerfile:%d: %s in %s: the runtime image has no shell", in.Line, strings.ToUpper(in.Cmd), final)
		case "add":
			t.Errorf("Dockerfile:%d: ADD in %s: copy only the binary, from the build stage", in.Line, final)
		case "copy":
			from, ok := in.flag("from")
			if !ok {
				t.Errorf("Dockerfile:%d: COPY from the build context into %s: copy only the binary, from the build stage", in.Line, final)
				continue
			}
			if _, ok := d.stageRef(from, final.Index); !ok {
				t.Errorf("Dockerfile:%d: COPY --from=%s is not an earlier stage", in.Line, from)
			}
			if len(in.Args) > 0 && in.Args[len(in.Args)-1] == "/controller" {
				copiesBinary = true
			}
		}
	}
	if !copiesBinary {
		t.Errorf("%s never copies the binary to /controller, the ENTRYPOINT", final)
	}
}

var (
	buildScriptRE = regexp.MustCompile(`(^|[\s;&|(])(\./)?hack/build\.sh(\s|$|[;&|)])`)
	// CGO_ENABLED=1, CGO_ENABLED="1", export CGO_ENABLED=1, ...
	cgoOnRE = regexp.MustCompile(`CGO_ENABLED\s*=\s*["']?1\b`)
	outRE   = regexp.MustCompile(`(?:^|\s)OUT=["']?([^\s"']+)`)
)

// buildStage is the stage the runtime stage copies /controller from.
func buildStage(t *testing.T, d dockerfile) (stage, instruction) {
	t.Helper()
	final := d.final()
	for _, in := range final.all("copy") {
		from, ok := in.flag("from")
		if !ok || len(in.Args) < 2 || in.Args[len(in.Args)-1] != "/controller" {
			continue
		}
		s, ok := d.stageRef(from, final.Index)
		if !ok {
			t.Fatalf("Dockerfile:%d: COPY --from=%s is not an earlier stage", in.Line, from)
		}
		return s, in
	}
	t.Fatalf("%s copies no /controller from a build stage", final)
	return stage{}, instruction{}
}

func TestDockerfileBuildStageRunsBuildScript(t *testing.T) {
	d := parseDockerfile(t)
	build, copyBinary := buildStage(t, d)

	var runs []instruction
	for _, in := range build.all("run") {
		if buildScriptRE.MatchString(strings.Join(in.Args, " ")) {
			runs = append(runs, in)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%s runs ./hack/build.sh %d times, want once: the image must build the binary the way `make build` does", build, len(runs))
	}
	run := runs[0]
	if run.JSON {
		t.Errorf("Dockerfile:%d: exec-form RUN cannot set VERSION and OUT for build.sh", run.Line)
	}

	// The binary copied out is the one build.sh wrote.
	m := outRE.FindStringSubmatch(run.Args[0])
	if m == nil {
		t.Fatalf("Dockerfile:%d: RUN does not set OUT for build.sh, so the binary's path is not pinned", run.Line)
	}
	if src := copyBinary.Args[0]; src != m[1] {
		t.Errorf("Dockerfile:%d: copies %s, but build.sh writes OUT=%s", copyBinary.Line, src, m[1])
	}

	// VERSION reaches build.sh: an ARG is visible to RUN only once it is
	// declared in the stage (a global ARG needs redeclaring too).
	declared := false
	for _, in := range build.Insns {
		if in.Line >= run.Line {
			break
		}
		if in.Cmd == "arg" && slices.ContainsFunc(in.Args, func(a string) bool {
			name, _, _ := strings.Cut(a, "=")
			return name == "VERSION"
		}) {
			declared = true
		}
	}
	if !declared {
		t.Errorf("%s does not declare ARG VERSION before running build.sh", build)
	}
}

func TestDockerfileDoesNotEnableCgo(t *testing.T) {
	d := parseDockerfile(t)
	build, _ := buildStage(t, d)
	insns := append(slices.Clone(d.MetaArgs), build.Insns...)
	for _, in := range insns {
		switch in.Cmd {
		case "env":
			for i := 0; i+1 < len(in.Args); i += 3 {
				if in.Args[i] == "CGO_ENABLED" && strings.Trim(in.Args[i+1], `"'`) != "0" {
					t.Errorf("Dockerfile:%d: ENV CGO_ENABLED=%s; the binary must stay static for distroless/static", in.Line, in.Args[i+1])
				}
			}
		case "arg":
			for _, a := range in.Args {
				if name, v, ok := strings.Cut(a, "="); ok && name == "CGO_ENABLED" && strings.Trim(v, `"'`) != "0" {
					t.Errorf("Dockerfile:%d: ARG %s; the binary must stay static for distroless/static", in.Line, a)
				}
			}
		case "run":
			if cgoOnRE.MatchString(in.Text) {
				t.Errorf("Dockerfile:%d: RUN sets CGO_ENABLED=1; the binary must stay static for distroless/static", in.Line)
			}
		}
	}

	// build.sh itself pins CGO_ENABLED=0 on its go build.
	script := string(readRepoFile(t, "hack", "build.sh"))
	if !regexp.MustCompile(`(?m)^[^#\n]*CGO_ENABLED=0\s+go build`).MatchString(script) {
		t.Error("hack/build.sh no longer runs `CGO_ENABLED=0 go build`")
	}
}

func TestDockerfileCachesModules(t *testing.T) {
	d := parseDockerfile(t)
	build, _ := buildStage(t, d)
	copyMods, download, copyAll := -1, -1, -1
	for i, in := range build.Insns {
		switch {
		case in.Cmd == "copy" && copyMods < 0 && slices.Contains(in.Args, "go.mod") && slices.Contains(in.Args, "go.sum") && !slices.Contains(in.Args, "."):
			copyMods = i
		case in.Cmd == "run" && download < 0 && strings.Contains(strings.Join(in.Args, " "), "go mod download"):
			download = i
		case in.Cmd == "copy" && copyAll < 0 && len(in.Args) >= 2 && in.Args[0] == ".":
			copyAll = i
		}
	}
	if copyMods < 0 || download < 0 || copyAll < 0 || !(copyMods < download && download < copyAll) {
		t.Errorf("%s should COPY go.mod go.sum, RUN go mod download, then COPY . . (found at %d, %d, %d) so module downloads stay cached", build, copyMods, download, copyAll)
	}
}

// The build image's Go is the one go.mod asks for, so the image does not
// build with an older toolchain (or download a newer one) than `make build`.
func TestDockerfileGoVersionMatchesGoMod(t *testing.T) {
	d := parseDockerfile(t)
	build, _ := buildStage(t, d)
	repo, tag := imageRepository(build.Base)
	if repo != "golang" && repo != "docker.io/library/golang" {
		t.Fatalf("%s is built on %q, want the official golang image", build, build.Base)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if want := string(m[1]); tag != want && !strings.HasPrefix(tag, want+".") && !strings.HasPrefix(tag, want+"-") {
		t.Errorf("%s uses golang:%s, but go.mod says go %s", build, tag, want)
	}
}

// `make build` and the image run the same script.
func TestMakeBuildRunsBuildScript(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "Makefile"))
	if os.IsNotExist(err) {
		t.Skip("no Makefile yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case regexp.MustCompile(`^build\s*:`).MatchString(line):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, line)
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#"):
			in = false
		}
	}
	if recipe == nil {
		t.Skip("the Makefile has no build target yet")
	}
	if !buildScriptRE.MatchString(strings.Join(recipe, "\n")) {
		t.Errorf("`make build` does not run hack/build.sh:\n%s", strings.Join(recipe, "\n"))
	}
}

// excluded reports whether .dockerignore keeps path (slash-separated,
// relative to the repository) out of the build context, matching each parent
// directory first as the context walker does.
func excluded(t *testing.T, pm *patternmatcher.PatternMatcher, path string) bool {
	t.Helper()
	var (
		info    patternmatcher.MatchInfo
		matched bool
		err     error
	)
	parts := strings.Split(path, "/")
	for i := range parts {
		matched, info, err = pm.MatchesUsingParentResults(strings.Join(parts[:i+1], "/"), info)
		if err != nil {
			t.Fatal(err)
		}
	}
	return matched
}

func TestDockerignore(t *testing.T) {
	f, err := os.Open(repoPath(t, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{
		".git/HEAD",
		"_output/bin/kubectl",
		"_output/local/kubeconfig",
		"controller",
		"database-controller.test",
		"pkg/builder/builder.test",
		"cover.out",
	} {
		if !excluded(t, pm, p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}

	// Everything the build stage needs is in the context: go.mod, go.sum,
	// build.sh and every Go source file of the main module that a build
	// with no tags compiles (the e2e suites' helpers, built only with the
	// e2e tag, are not).
	need := []string{"go.mod", "go.sum", "hack/build.sh"}
	root := repoPath(t)
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel == ".git" || rel == "_output" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // a nested module, not part of the binary
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			ctx := build.Default
			ctx.GOOS, ctx.GOARCH = "linux", "amd64"
			if ok, err := ctx.MatchFile(filepath.Dir(path), e.Name()); err != nil || ok {
				need = append(need, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range need {
		if excluded(t, pm, p) {
			t.Errorf(".dockerignore keeps %s out of the build context, but the build needs it", p)
		}
	}
}
