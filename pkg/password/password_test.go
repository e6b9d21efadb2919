package password

import (
	"bytes"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	p, err := Generate(bytes.NewReader(bytes.Repeat([]byte{61, 255, 0, 250}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	// 255 and 250 are rejected (>= 248, the largest multiple of 62 below 256); 61 -> '9', 0 -> 'A'.
	if want := strings.Repeat("9A", Length/2); p != want {
		t.Fatalf("Generate = %q, want %q", p, want)
	}
	if _, err := Generate(bytes.NewReader(nil)); err == nil {
		t.Fatal("Generate with an empty source succeeded")
	}
}
