// Package secrets is the edge's in-memory secret store (ROUTING.md R-SEC-1,
// DESIGN.md §5).
//
// Secrets reach an edge only inside a config snapshot, each one sealed with
// AES-256-GCM under the edge key (Open). The edge decrypts them into a Store,
// holds them in memory only, and hands a value out only for a host the
// secret is bound to: a secret is never sent anywhere else.
//
// Hazard: a secret value must never reach a log, an error or a metric. Every
// type here that holds a value (Secret, AWSCredentials, Store) redacts it in
// String, GoString and every fmt verb, and no error of this package contains
// a value or any part of one. Code that copies a value out (Store.Get) takes
// over that duty.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// Errors of this package. Callers match them with errors.Is; the texts that
// wrap them name secrets and hosts but never carry a value.
var (
	// ErrNotSet means the tenant has no secret of that name.
	ErrNotSet = errors.New("secret not set")
	// ErrNotBound means the secret exists but is not bound to the host it
	// was asked for (R-SEC-1): it must not be sent there.
	ErrNotBound = errors.New("secret not bound to host")
	// ErrBadKey means the edge key is not 32 bytes (AES-256).
	ErrBadKey = errors.New("edge key must be 32 bytes")
	// ErrDecrypt means a ciphertext is too short or does not authenticate
	// under the edge key (wrong key, or tampered with).
	ErrDecrypt = errors.New("secret does not decrypt")
	// ErrMalformed means a secret's value does not have the shape its use
	// needs (e.g. AWS credentials).
	ErrMalformed = errors.New("malformed secret value")
	// ErrInvalid means a secret given to NewStore is not usable: no name, no
	// host, an unparsable host, or a duplicate.
	ErrInvalid = errors.New("invalid secret")
)

// KeySize is the size of an edge key: AES-256.
const KeySize = 32

// NonceSize is the size of the GCM nonce that prefixes every ciphertext.
const NonceSize = 12

// Secret is one decrypted secret as the edge holds it.
//
// Value is the secret itself. Secret redacts it in every fmt verb, in
// String, GoString, slog and JSON output; but Value is an exported slice, and
// code that reads it directly must not print, log or wrap it.
type Secret struct {
	// Name is the secret's name, unique per tenant.
	Name string
	// TenantID owns the secret; "" is a cluster-managed secret, used by
	// managed records.
	TenantID string
	// Hosts are the hosts the secret may be sent to: "name" (any port) or
	// "name:port" (that port only). IPv6 literals are written "[::1]" or
	// "[::1]:443". No wildcards.
	Hosts []string
	// Value is the plaintext secret.
	Value []byte
}

const redacted = "REDACTED"

// String describes the secret without its value.
func (s Secret) String() string {
	return fmt.Sprintf("secret %q (tenant %q, hosts %q, value %s)", s.Name, s.TenantID, s.Hosts, redacted)
}

// GoString is the %#v form, without the value.
func (s Secret) GoString() string {
	return fmt.Sprintf("secrets.Secret{Name:%q, TenantID:%q, Hosts:%#v, Value:%s}", s.Name, s.TenantID, s.Hosts, redacted)
}

// Format makes every fmt verb (%v, %+v, %#v, %s, %q, %x, …) print the
// redacted description, never the value.
func (s Secret) Format(f fmt.State, verb rune) { formatRedacted(f, verb, s.String(), s.GoString()) }

// LogValue keeps the value out of slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps the value out of JSON output: only the name, tenant and
// hosts are written.
func (s Secret) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"name":`)
	b.WriteString(strconv.Quote(s.Name))
	b.WriteString(`,"tenant_id":`)
	b.WriteString(strconv.Quote(s.TenantID))
	b.WriteString(`,"hosts":[`)
	for i, h := range s.Hosts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(h))
	}
	b.WriteString(`],"value":"` + redacted + `"}`)
	return []byte(b.String()), nil
}

// formatRedacted writes a redacting type's description for any verb: the Go
// syntax form for %#v, a quoted form for %q, and the plain description
// otherwise (so %x or %d never dump raw fields).
func formatRedacted(f fmt.State, verb rune, plain, goSyntax string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, goSyntax)
	case verb == 'q':
		io.WriteString(f, strconv.Quote(plain))
	default:
		io.WriteString(f, plain)
	}
}

// Open decrypts a secret sealed by Seal: AES-256-GCM under edgeKey, with the
// 12-byte nonce prepended to the ciphertext and no additional data. Errors
// wrap ErrBadKey or ErrDecrypt and never contain key or plaintext material.
func Open(edgeKey, ciphertext []byte) ([]byte, error) {
	aead, err := newAEAD(edgeKey)
	if err != nil {
		return nil, err
	}
	if len(ciphertext) < NonceSize+aead.Overhead() {
		return nil, fmt.Errorf("secrets: ciphertext of %d bytes is too short: %w", len(ciphertext), ErrDecrypt)
	}
	nonce, sealed := ciphertext[:NonceSize], ciphertext[NonceSize:]
	plain, err := aead.Open(nil, nonce, sealed, nil)
	if err != nil {
		// cipher's error carries no secret material, but it says nothing
		// useful either: the sentinel is the whole story.
		return nil, fmt.Errorf("secrets: open: %w", ErrDecrypt)
	}
	return plain, nil
}

// Seal encrypts plaintext for Open: a fresh 12-byte nonce read from rand,
// then the AES-256-GCM ciphertext and tag. It is what the control plane does
// when it puts a secret in an edge snapshot; the edge itself only opens.
// rand must be a cryptographically secure source (crypto/rand.Reader):
// reusing a nonce under one key breaks GCM.
func Seal(edgeKey, plaintext []byte, rand io.Reader) ([]byte, error) {
	aead, err := newAEAD(edgeKey)
	if err != nil {
		return nil, err
	}
	out := make([]byte, NonceSize, NonceSize+len(plaintext)+aead.Overhead())
	if _, err := io.ReadFull(rand, out); err != nil {
		return nil, fmt.Errorf("secrets: reading nonce: %w", err)
	}
	return aead.Seal(out, out[:NonceSize], plaintext, nil), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secrets: edge key of %d bytes: %w", len(key), ErrBadKey)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return aead, nil
}
