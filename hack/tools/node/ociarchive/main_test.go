package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The archive is an OCI image layout: its index names the image, its
// manifest points at the config and at the layer by their digests, and the
// config holds the entrypoint, env and user given.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	rootfs, layer := writeLayer(t, dir, "rootfs.tar", "entrypoint.sh", "#!/bin/sh\necho hi\n")
	out := filepath.Join(dir, "image.tar")
	err := write([]string{rootfs}, "localhost/dbc/test:1", out, image{Architecture: "amd64", OS: "linux", Config: imageConfig{
		User: "999:999", Env: []string{"A=b"}, Entrypoint: []string{"/entrypoint.sh"}, Cmd: []string{"serve"},
	}})
	if err != nil {
		t.Fatal(err)
	}

	files := readTar(t, out)
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustJSON(t, files["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != "localhost/dbc/test:1" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1" {
		t.Fatalf("index: %+v", index)
	}
	manifestBytes := blob(t, files, index.Manifests[0])
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustJSON(t, manifestBytes, &manifest)
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != mediaLayer {
		t.Fatalf("layers: %+v", manifest.Layers)
	}
	if got := blob(t, files, manifest.Layers[0]); !bytes.Equal(got, layer) {
		t.Errorf("the layer blob is not the root filesystem tar")
	}
	var cfg image
	mustJSON(t, blob(t, files, manifest.Config), &cfg)
	if cfg.Config.User != "999:999" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/entrypoint.sh" ||
		len(cfg.Config.Cmd) != 1 || cfg.Config.Cmd[0] != "serve" || len(cfg.Config.Env) != 1 || cfg.Config.Env[0] != "A=b" {
		t.Errorf("config: %+v", cfg.Config)
	}
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Errorf("diff_ids %v, layer %s", cfg.RootFS.DiffIDs, manifest.Layers[0].Digest)
	}
}

// Layers given after the root filesystem follow it, in order, in the
// manifest and in the config's diff_ids; the root filesystem's layer is the
// same blob as in an image made from it alone.
func TestWriteLayersOverTheRootFilesystem(t *testing.T) {
	dir := t.TempDir()
	rootfs, base := writeLayer(t, dir, "rootfs.tar", "bin/sh", "a shell")
	extra, top := writeLayer(t, dir, "extra.tar", "docker-entrypoint-initdb.d/00-slow.sh", "sleep 100\n")
	out := filepath.Join(dir, "image.tar")
	if err := write([]string{rootfs, extra}, "localhost/dbc/test-slow:1", out, image{Architecture: "amd64", OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, out)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustJSON(t, files["index.json"], &index)
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustJSON(t, blob(t, files, index.Manifests[0]), &manifest)
	if len(manifest.Layers) != 2 {
		t.Fatalf("layers: %+v, want 2", manifest.Layers)
	}
	for i, want := range [][]byte{base, top} {
		if got := blob(t, files, manifest.Layers[i]); !bytes.Equal(got, want) {
			t.Errorf("layer %d is not the tar given in that place", i)
		}
	}
	var cfg image
	mustJSON(t, blob(t, files, manifest.Config), &cfg)
	if len(cfg.RootFS.DiffIDs) != 2 || cfg.RootFS.DiffIDs[0] != manifest.Layers[0].Digest || cfg.RootFS.DiffIDs[1] != manifest.Layers[1].Digest {
		t.Errorf("diff_ids %v, layers %+v", cfg.RootFS.DiffIDs, manifest.Layers)
	}
	sum := sha256.Sum256(base)
	if manifest.Layers[0].Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("the root filesystem's layer is %s, not the digest of the tar alone", manifest.Layers[0].Digest)
	}
}

func TestWriteRefusesANameWithoutTag(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs.tar")
	_ = os.WriteFile(rootfs, make([]byte, 1024), 0o644)
	if err := write([]string{rootfs}, "localhost:5000/dbc/test", filepath.Join(dir, "out.tar"), image{}); err == nil {
		t.Error("a name without a tag was accepted")
	}
}

// writeLayer writes a tar holding one file and returns its path and bytes.
func writeLayer(t *testing.T, dir, name, file, content string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// blob returns the blob a descriptor points at, checking its size and digest.
func blob(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+hexOf(d.Digest)]
	if !ok {
		t.Fatalf("no blob %s", d.Digest)
	}
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: size %d, want %d, or digest mismatch", d.Digest, len(b), d.Size)
	}
	return b
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
}

func mustJSON(t *testing.T, b []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
