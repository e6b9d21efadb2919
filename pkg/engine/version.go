package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Base is what every engine has, data only: its catalog and its runtime
// contract. An engine embeds it and adds its rules.
type Base struct {
	Catalog Catalog
	// Contract is how the server runs in a pod (Runtime returns it).
	Contract Runtime
}

// Name is the engine's name in spec.engine.
func (b *Base) Name() string { return b.Catalog.Engine }

// Runtime returns the contract; it is shared, read only.
func (b *Base) Runtime() *Runtime { return &b.Contract }

// Versions lists the catalog, oldest first.
func (b *Base) Versions() []string { return slices.Clone(b.Catalog.Versions) }

// Image returns the image of version, or override.
func (b *Base) Image(version, override string) (string, error) {
	return b.Catalog.Image(version, override)
}

// Catalog is the versions an engine knows how to run, and where their
// official images are.
type Catalog struct {
	// Engine names the engine in messages.
	Engine string
	// Repository is the official image repository; the tag is the version.
	Repository string
	// Versions are the versions the controller knows how to run.
	Versions []string
}

// Image returns the image for version, or override when one is set, or an
// error a user can act on when the version is not in the catalog.
func (c Catalog) Image(version, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	if !slices.Contains(c.Versions, version) {
		return "", fmt.Errorf("version %q of %s is not in the catalog (known: %s); use one of those or set spec.image",
			version, c.Engine, strings.Join(c.Versions, ", "))
	}
	return c.Repository + ":" + version, nil
}

// Reasons of a refused version change, in the Ready condition and the
// Warning event.
const (
	ReasonDowngradeRefused            = "DowngradeRefused"
	ReasonMajorUpgradeRefused         = "MajorUpgradeRefused"
	ReasonSeriesSkipRefused           = "SeriesSkipRefused"
	ReasonFeatureCompatibilityPending = "FeatureCompatibilityPending"
	ReasonRestoreRefused              = "RestoreRefused"
)

// VersionChangeError is a version change that the data cannot take in
// place. Reason is one of the Reason constants; Message says why and what
// to do.
type VersionChangeError struct {
	Reason  string
	Message string
}

func (e *VersionChangeError) Error() string { return e.Reason + ": " + e.Message }

// RefuseDowngrade refuses a move from running to desired that lowers the
// release series, whose first seriesLength components name it (1 for
// "16", 2 for "8.4"). An empty or unparsable version is never refused: the
// schema rejects malformed versions, and nothing ran yet without one.
func RefuseDowngrade(engine string, seriesLength int, running, desired string) error {
	if !isDowngrade(seriesLength, running, desired) {
		return nil
	}
	return &VersionChangeError{Reason: ReasonDowngradeRefused, Message: fmt.Sprintf(
		"version %s is older than the running version %s; %s cannot be downgraded in place: set spec.version back to %s or later",
		desired, running, engine, running)}
}

// Series is the release series of version: its first length components,
// such as "8.4" of "8.4.2" with length 2, or "" when version is malformed.
func Series(version string, length int) string {
	v, err := parseVersion(version)
	if err != nil {
		return ""
	}
	parts := make([]string, length)
	for i := range length {
		parts[i] = strconv.Itoa(component(v, i))
	}
	return strings.Join(parts, ".")
}

// RefuseSeriesSkip refuses an upgrade that does not go to the next series
// of path, the engine's upgrade path in order (such as 6.0, 7.0, 8.0), or
// that starts or ends outside it. A move within one series, or nothing run
// yet, is allowed; a downgrade is refused by RefuseDowngrade first.
func RefuseSeriesSkip(engine string, path []string, seriesLength int, running, desired string) error {
	if err := RefuseDowngrade(engine, seriesLength, running, desired); err != nil {
		return err
	}
	from, to := Series(running, seriesLength), Series(desired, seriesLength)
	if from == "" || to == "" || from == to {
		return nil
	}
	i, j := slices.Index(path, from), slices.Index(path, to)
	if i >= 0 && j == i+1 {
		return nil
	}
	next := "none: it is the newest series the controller knows"
	if i >= 0 && i+1 < len(path) {
		next = path[i+1]
	}
	return &VersionChangeError{Reason: ReasonSeriesSkipRefused, Message: fmt.Sprintf(
		"%s upgrades one release series at a time along %s; %s to %s skips or leaves that path, and the data of %s cannot be read by %s. Set spec.version to the next series (%s), wait for Running, then go on; or set spec.version back to %s",
		engine, strings.Join(path, " → "), from, to, from, to, next, running)}
}

func isDowngrade(seriesLength int, running, desired string) bool {
	cur, err1 := parseVersion(running)
	des, err2 := parseVersion(desired)
	if err1 != nil || err2 != nil {
		return false
	}
	for i := range seriesLength {
		c, d := component(cur, i), component(des, i)
		if d != c {
			return d < c
		}
	}
	return false
}

func component(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func parseVersion(v string) ([]int, error) {
	if v == "" {
		return nil, fmt.Errorf("empty version")
	}
	parts := strings.Split(v, ".")
	out := make([]int, len(parts))
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed version %q", v)
		}
		out[i] = n
	}
	return out, nil
}

// RefuseRestoreIntoOlder refuses to restore a backup taken at from into a
// Database of an older series: a dump may use what the older server does
// not know. The same series or a newer one is the upgrade path.
func RefuseRestoreIntoOlder(engine string, seriesLength int, from, to string) error {
	if Series(from, seriesLength) == "" || Series(to, seriesLength) == "" {
		return &VersionChangeError{Reason: ReasonRestoreRefused, Message: fmt.Sprintf(
			"cannot compare the backup's version %q with %q", from, to)}
	}
	if !isDowngrade(seriesLength, from, to) {
		return nil
	}
	return &VersionChangeError{Reason: ReasonRestoreRefused, Message: fmt.Sprintf(
		"the backup was taken from %s %s, and %s is older: restore it into version %s or later",
		engine, from, to, Series(from, seriesLength))}
}
