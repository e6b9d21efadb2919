// Package password makes the passwords of new credentials Secrets.
package password

import (
	"fmt"
	"io"
)

const (
	// Length and Alphabet shape generated passwords: 24 characters of 62
	// give about 143 bits, and need no escaping in a URI.
	Length   = 24
	Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// Generate makes a password from the bytes of random (crypto/rand.Reader in
// production). Rejection sampling keeps every character equally likely.
func Generate(random io.Reader) (string, error) {
	out := make([]byte, 0, Length)
	buf := make([]byte, 64)
	limit := byte(256 - 256%len(Alphabet))
	for len(out) < Length {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("generating a password: %w", err)
		}
		for _, b := range buf {
			if b < limit && len(out) < Length {
				out = append(out, Alphabet[int(b)%len(Alphabet)])
			}
		}
	}
	return string(out), nil
}
