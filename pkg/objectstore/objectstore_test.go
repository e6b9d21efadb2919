package objectstore

import (
	"strings"
	"testing"
)

// New refuses, with words that say what is wrong, what would address
// another store, bucket or object than the one meant; and puts the keys
// under the prefix.
func TestNew(t *testing.T) {
	good := Config{Endpoint: "https://s3.example.com", Bucket: "backups", AccessKeyID: "id", SecretAccessKey: "secret"}
	for _, tt := range []struct {
		name   string
		change func(*Config)
		err    string
	}{
		{name: "https", change: func(*Config) {}},
		{name: "http with a port", change: func(c *Config) { c.Endpoint = "http://127.0.0.1:7070" }},
		{name: "a trailing slash", change: func(c *Config) { c.Endpoint = "https://s3.example.com/" }},
		{name: "no scheme", change: func(c *Config) { c.Endpoint = "s3.example.com" }, err: "want https://host[:port]"},
		{name: "another scheme", change: func(c *Config) { c.Endpoint = "s3://backups" }, err: "want https://host[:port]"},
		{name: "a path", change: func(c *Config) { c.Endpoint = "https://s3.example.com/backups" }, err: "has a path or a query"},
		{name: "no bucket", change: func(c *Config) { c.Bucket = "" }, err: "no bucket"},
		{name: "no secret", change: func(c *Config) { c.SecretAccessKey = "" }, err: "no access key id or secret access key"},
		{name: "a prefix with ..", change: func(c *Config) { c.Prefix = "a/../b" }, err: `an empty, "." or ".." part`},
		{name: "a CA without TLS", change: func(c *Config) { c.Endpoint, c.CA = "http://127.0.0.1:7070", []byte("x") }, err: "without TLS"},
		{name: "a CA that is no PEM", change: func(c *Config) { c.CA = []byte("not a certificate") }, err: "no PEM certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.change(&cfg)
			_, err := New(cfg)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("New: %v, want an error with %q", err, tt.err)
			}
		})
	}
}

func TestKeysAreUnderThePrefix(t *testing.T) {
	for _, tt := range []struct {
		prefix, key, want, err string
	}{
		{prefix: "", key: "ns/db/uid/base/1", want: "ns/db/uid/base/1"},
		{prefix: "/team-a/", key: "/ns/db/uid/x", want: "team-a/ns/db/uid/x"},
		{prefix: "team-a/prod", key: "x", want: "team-a/prod/x"},
		{prefix: "team-a", key: "", err: "not a key"},
		{prefix: "team-a", key: "ns//x", err: "not a key"},
		{prefix: "team-a", key: "../other/x", err: "not a key"},
	} {
		s, err := New(Config{Endpoint: "http://127.0.0.1:7070", Bucket: "b", Prefix: tt.prefix, AccessKeyID: "id", SecretAccessKey: "s"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.name(tt.key)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("name(%q) under %q = %q, %v; want an error with %q", tt.key, tt.prefix, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("name(%q) under %q = %q, %v; want %q", tt.key, tt.prefix, got, err, tt.want)
		}
	}
}

func TestDatabaseDir(t *testing.T) {
	if got := DatabaseDir("shop", "orders", "5f1c"); got != "shop/orders/5f1c" {
		t.Errorf("DatabaseDir = %q", got)
	}
}
