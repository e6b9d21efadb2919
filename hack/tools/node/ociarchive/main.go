// Command ociarchive writes an OCI image archive (an OCI image layout in a
// tar: oci-layout, index.json, the manifest, the config and the layers) from
// a root filesystem tar and, optionally, layers to put over it, for
// `ctr images import`. Nothing can be
// pulled from a registry on the machines the real node runs on, so the
// node's images (pause, PostgreSQL, MariaDB) are written with this.
//
// Usage:
//
//	ociarchive -rootfs rootfs.tar -name localhost/dbc/postgresql:15 \
//	  -entrypoint /usr/local/bin/docker-entrypoint.sh -cmd postgres \
//	  -env PATH=/usr/bin:/bin -user 999:999 -o image.tar
//
// Two images made from the same root filesystem tar share its layer: an
// image that adds a file to another (the real node's slow-init PostgreSQL)
// costs the node one small layer.
package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type imageConfig struct {
	User         string              `json:"User,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	StopSignal   string              `json:"StopSignal,omitempty"`
}

type image struct {
	Created      string      `json:"created"`
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Config       imageConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
)

func main() {
	var (
		rootfs, name, user, workdir, out, stopSignal string
		entrypoint, cmd, env, ports, layers          list
	)
	flag.StringVar(&rootfs, "rootfs", "", "root filesystem tar, the image's first layer (uncompressed)")
	flag.Var(&layers, "layer", "a tar to put over the root filesystem, the next layer (uncompressed; repeat)")
	flag.StringVar(&name, "name", "", "image name, e.g. localhost/dbc/postgresql:15")
	flag.StringVar(&user, "user", "", "the config's User")
	flag.StringVar(&workdir, "workdir", "", "the config's WorkingDir")
	flag.StringVar(&stopSignal, "stop-signal", "", "the config's StopSignal")
	flag.StringVar(&out, "o", "", "output archive")
	flag.Var(&entrypoint, "entrypoint", "an element of the Entrypoint (repeat)")
	flag.Var(&cmd, "cmd", "an element of the Cmd (repeat)")
	flag.Var(&env, "env", "NAME=VALUE of the Env (repeat)")
	flag.Var(&ports, "port", "an exposed port, e.g. 5432/tcp (repeat)")
	flag.Parse()
	if rootfs == "" || name == "" || out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ociarchive -rootfs TAR -name NAME -o OUT [-layer TAR]... [-entrypoint E]... [-cmd C]... [-env K=V]... [-user U]")
		os.Exit(2)
	}
	if err := write(append([]string{rootfs}, layers...), name, out, image{
		Created:      time.Unix(0, 0).UTC().Format(time.RFC3339),
		Architecture: "amd64",
		OS:           "linux",
		Config: imageConfig{
			User: user, Env: env, Entrypoint: entrypoint, Cmd: cmd,
			WorkingDir: workdir, StopSignal: stopSignal, ExposedPorts: portSet(ports),
		},
	}); err != nil {
		fmt.Fprintln(os.Stderr, "ociarchive:", err)
		os.Exit(1)
	}
}

func portSet(ports []string) map[string]struct{} {
	if len(ports) == 0 {
		return nil
	}
	m := map[string]struct{}{}
	for _, p := range ports {
		m[p] = struct{}{}
	}
	return m
}

// write writes the archive: layers[0] is the root filesystem, and each
// later tar is put over the ones before it.
func write(layers []string, name, out string, img image) error {
	if len(layers) == 0 {
		return fmt.Errorf("no layers")
	}
	img.RootFS.Type = "layers"
	img.RootFS.DiffIDs = nil
	var descriptors []descriptor
	for _, path := range layers {
		d, n, err := digestFile(path)
		if err != nil {
			return err
		}
		img.RootFS.DiffIDs = append(img.RootFS.DiffIDs, d)
		descriptors = append(descriptors, descriptor{MediaType: mediaLayer, Digest: d, Size: n})
	}
	config, err := json.Marshal(img)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{2, mediaManifest,
		descriptor{MediaType: mediaConfig, Digest: digest(config), Size: int64(len(config))},
		descriptors,
	})
	if err != nil {
		return err
	}
	tag := name[strings.LastIndex(name, ":")+1:]
	if strings.Contains(tag, "/") {
		return fmt.Errorf("image name %q has no tag", name)
	}
	index, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, mediaIndex, []descriptor{{
		MediaType: mediaManifest, Digest: digest(manifest), Size: int64(len(manifest)),
		Platform: &platform{Architecture: img.Architecture, OS: img.OS},
		Annotations: map[string]string{
			"io.containerd.image.name":          name,
			"org.opencontainers.image.ref.name": tag,
		},
	}}})
	if err != nil {
		return err
	}

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"blobs/sha256/" + hexOf(digest(config)), config},
		{"blobs/sha256/" + hexOf(digest(manifest)), manifest},
		{"index.json", index},
	} {
		if err := addFile(tw, e.name, int64(len(e.data)), strings.NewReader(string(e.data))); err != nil {
			return err
		}
	}
	written := map[string]bool{}
	for i, path := range layers {
		d := descriptors[i]
		if written[d.Digest] {
			continue // the same tar twice is one blob
		}
		written[d.Digest] = true
		if err := addLayer(tw, path, d); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// addLayer copies the tar at path into the archive as the blob d names,
// and fails if it no longer has that digest.
func addLayer(tw *tar.Writer, path string, d descriptor) error {
	layer, err := os.Open(path)
	if err != nil {
		return err
	}
	defer layer.Close()
	h := sha256.New()
	if err := addFile(tw, "blobs/sha256/"+hexOf(d.Digest), d.Size, io.TeeReader(layer, h)); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d.Digest {
		return fmt.Errorf("%s changed while it was read", path)
	}
	return nil
}

func addFile(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}

func digestFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func hexOf(d string) string { return strings.TrimPrefix(d, "sha256:") }
