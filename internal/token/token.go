// Package token makes the random tokens every asidekit package stores in
// Redis to tell one writer, lease or lock holder from another: lock tokens,
// lease and version tokens of cacheaside, rebuild and refresh leases of
// guard/bloom, repo/configstore and seqgen.
package token

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
)

// Len is the length of a token: 128 random bits, URL-safe base64 encoded.
const Len = 22

// New returns a fresh token: 128 bits from math/rand/v2's global source
// (ChaCha8, seeded from the operating system at start), so no two calls, in
// this process or another, return the same one in practice, and a key that
// expired and was recreated never holds a token read before. Tokens tell
// holders apart; they are not secrets.
func New() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}
