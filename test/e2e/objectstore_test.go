//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbcontroller/database-controller/pkg/objectstore"
)

// localStore is the Config of the object store hack/local-up.sh started
// beside the control plane, from its objectstore.env.
func localStore(t *testing.T) objectstore.Config {
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

// The object store of the local cluster (versitygw, started by
// hack/local-up.sh) serves its bucket through package objectstore: two
// Databases of one name, made one after the other (two UIDs), keep their
// files apart under one prefix; a stream of unknown length goes up in
// parts and comes back whole; a missing key is ErrNotFound; a wrong
// secret is refused, in the store's words.
func TestLocalObjectStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := localStore(t)
	cfg.Prefix = "e2e/" + t.Name()
	store, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, second := objectstore.DatabaseDir("shop", "orders", "uid-1"), objectstore.DatabaseDir("shop", "orders", "uid-2")

	// More than one part, of unknown length.
	big := make([]byte, objectstore.PartSize+1<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, first+"/dumps/a.sql", io.MultiReader(bytes.NewReader(big)), -1); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, second+"/dumps/a.sql", strings.NewReader("second"), 6); err != nil {
		t.Fatal(err)
	}
	r, err := store.Get(ctx, first+"/dumps/a.sql")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || sha256.Sum256(got) != sha256.Sum256(big) {
		t.Errorf("read back %d bytes (%v), want the %d written", len(got), err, len(big))
	}
	for dir, want := range map[string]int64{first: int64(len(big)), second: 6} {
		objects, err := store.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(objects) != 1 || objects[0].Key != dir+"/dumps/a.sql" || objects[0].Size != want {
			t.Errorf("List(%s) = %+v, want %s/dumps/a.sql of %d bytes alone", dir, objects, dir, want)
		}
	}
	if err := store.Delete(ctx, first+"/dumps/a.sql"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, first+"/dumps/a.sql"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Get of a deleted key: %v, want ErrNotFound", err)
	}
	if all, err := store.List(ctx, ""); err != nil || len(all) != 1 || all[0].Key != second+"/dumps/a.sql" {
		t.Errorf("List of the prefix after the delete = %+v, %v; want the second Database's file alone", all, err)
	}

	cfg.SecretAccessKey = "wrong"
	wrong, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.List(ctx, "")
	t.Logf("a wrong secret: %v", err)
	if err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("List with a wrong secret: %v, want the store's refusal of the signature", err)
	}
}
