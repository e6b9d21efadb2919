//go:build e2e

package e2eutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// LocalObjectStore is the Config of the object store hack/local-up.sh
// started beside the control plane in localDir, from its objectstore.env:
// with no prefix.
func LocalObjectStore(t testing.TB, localDir string) objectstore.Config {
	t.Helper()
	env, err := os.ReadFile(filepath.Join(localDir, "objectstore.env"))
	if err != nil {
		t.Fatalf("the local cluster's object store: %v", err)
	}
	v := map[string]string{}
	for _, line := range strings.Split(string(env), "\n") {
		if k, val, ok := strings.Cut(line, "="); ok {
			v[k] = val
		}
	}
	return objectstore.Config{Endpoint: v["OBJECTSTORE_ENDPOINT"], Bucket: v["OBJECTSTORE_BUCKET"], Region: v["OBJECTSTORE_REGION"],
		AccessKeyID: v["OBJECTSTORE_ACCESS_KEY_ID"], SecretAccessKey: v["OBJECTSTORE_SECRET_ACCESS_KEY"]}
}
