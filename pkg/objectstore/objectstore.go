// Package objectstore writes, lists, reads and deletes a Database's backups
// in a bucket of an S3-compatible object store, under a prefix of the
// user's and a directory of the Database's own (DatabaseDir), so that one
// bucket holds many Databases, and a Database made again under the same
// name, without two files under one name. It speaks S3 through minio-go,
// a well-kept client, and holds no state but its connection settings.
package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"k8s.io/apimachinery/pkg/types"
)

// Config says where the store is and how to sign in.
type Config struct {
	// Endpoint is the store's URL, https://host[:port], or http:// for a
	// store without TLS (the local cluster's). It has no path: the bucket
	// is addressed by path (https://host/bucket/key), which every
	// S3-compatible store serves.
	Endpoint string
	// Bucket holds the objects; Prefix, when set, is a directory of it
	// that holds them ("team-a", or "team-a/prod").
	Bucket, Prefix string
	// Region is the bucket's region; empty for the store's default.
	Region string
	// AccessKeyID and SecretAccessKey sign every request.
	AccessKeyID, SecretAccessKey string
	// CA holds PEM certificates trusted, in place of the system's, for an
	// https endpoint with a certificate of a private authority.
	CA []byte
}

// Store is a bucket, under a prefix, of an S3-compatible object store.
type Store struct {
	client *minio.Client
	bucket string
	prefix string
}

// Object is an object of the store: its key under the Store's prefix, its
// size in bytes and when it was written.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// ErrNotFound is Get's error for a key the store does not hold.
var ErrNotFound = errors.New("no such object")

// New checks cfg and returns its Store. It does not connect: the first
// request does.
func New(cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("object store endpoint %q: want https://host[:port] (or http:// for a store without TLS)", cfg.Endpoint)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return nil, fmt.Errorf("object store endpoint %q: it has a path or a query; the bucket is named on its own", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("object store: no bucket")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("object store: no access key id or secret access key")
	}
	prefix, err := cleanKey(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("object store prefix %q: %w", cfg.Prefix, err)
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	if len(cfg.CA) > 0 {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("object store endpoint %q: a CA is given for an endpoint without TLS", cfg.Endpoint)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("object store CA: no PEM certificate in it")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
		Transport:    http.RoundTripper(transport),
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Endpoint, err)
	}
	return &Store{client: client, bucket: cfg.Bucket, prefix: prefix}, nil
}

// DatabaseDir is the directory of the store that holds the backups of the
// Database namespace/name whose UID is uid: a Database deleted and made
// again under its name has a directory of its own.
func DatabaseDir(namespace, name string, uid types.UID) string {
	return path.Join(namespace, name, string(uid))
}

// cleanKey is key without leading or trailing slashes; a key with an
// empty, "." or ".." part is refused: it would name another object than
// it seems to.
func cleanKey(key string) (string, error) {
	key = strings.Trim(key, "/")
	if key == "" {
		return "", nil
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return "", errors.New("an empty, \".\" or \"..\" part")
		}
	}
	return key, nil
}

// name is the object name of key: under the prefix.
func (s *Store) name(key string) (string, error) {
	k, err := cleanKey(key)
	if err != nil || k == "" {
		return "", fmt.Errorf("object key %q: not a key", key)
	}
	if s.prefix == "" {
		return k, nil
	}
	return s.prefix + "/" + k, nil
}

// PartSize is the size of the parts Put sends a stream of unknown length
// in, one at a time: Put's memory is about one part, and such a stream
// may be up to 10,000 parts (S3's limit), 320 GiB, long.
const PartSize = 32 << 20

// Put writes what r reads to key, replacing what key held: size bytes, or,
// with size -1, until r ends, in parts of PartSize.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: PartSize, NumThreads: 1}
	if _, err := s.client.PutObject(ctx, s.bucket, name, r, size, opts); err != nil {
		return fmt.Errorf("writing %s to bucket %s: %w", name, s.bucket, err)
	}
	return nil
}

// ErrDiffers is PutOnce's error for a key that holds other bytes.
var ErrDiffers = errors.New("the store holds other bytes under this name")

// PutOnce writes the file at file to key unless key holds it already. A
// key holding the same bytes (a retry whose first try's end the caller
// never heard) is success; a key holding other bytes is ErrDiffers and
// keeps them: two different files never end up under one name.
func (s *Store) PutOnce(ctx context.Context, key, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	held, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return s.Put(ctx, key, f, fi.Size())
	case err != nil:
		return err
	}
	defer held.Close()
	same, err := sameBytes(held, f)
	if err != nil {
		return fmt.Errorf("comparing %s with what the store holds under %s: %w", file, key, err)
	}
	if !same {
		return fmt.Errorf("%s: %w (%s is not what it holds)", key, ErrDiffers, file)
	}
	return nil
}

// sameBytes reads a and b to their ends and says whether they were equal.
func sameBytes(a, b io.Reader) (bool, error) {
	ha, hb := sha256.New(), sha256.New()
	if _, err := io.Copy(ha, a); err != nil {
		return false, err
	}
	if _, err := io.Copy(hb, b); err != nil {
		return false, err
	}
	return bytes.Equal(ha.Sum(nil), hb.Sum(nil)), nil
}

// Get reads key; ErrNotFound when the store does not hold it. The caller
// closes what it returns.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	// minio-go's object says nothing before it is read: Stat asks first,
	// so that a missing key is an error here, not at the first Read.
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat()
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, fmt.Errorf("reading %s from bucket %s: %w", name, s.bucket, ErrNotFound)
		}
		return nil, fmt.Errorf("reading %s from bucket %s: %w", name, s.bucket, err)
	}
	return obj, nil
}

// List is every object under the directory dir ("" for the whole prefix),
// by key.
func (s *Store) List(ctx context.Context, dir string) ([]Object, error) {
	d, err := cleanKey(dir)
	if err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	}
	under := path.Join(s.prefix, d)
	if under != "" {
		under += "/"
	}
	var out []Object
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: under, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("listing %s in bucket %s: %w", under, s.bucket, o.Err)
		}
		key := o.Key
		if s.prefix != "" {
			key = strings.TrimPrefix(key, s.prefix+"/")
		}
		out = append(out, Object{Key: key, Size: o.Size, LastModified: o.LastModified})
	}
	return out, nil
}

// Delete removes key; a key the store does not hold is no error.
func (s *Store) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("deleting %s from bucket %s: %w", name, s.bucket, err)
	}
	return nil
}
