// Package secretbox encrypts secret values: at rest under the master key
// (Box, with the nonce kept in its own column), and for edges under the edge
// key (Seal and Open, the format of weir.dev/edge/internal/secrets).
//
// Hazard: plaintexts pass through here. No error of this package contains
// key or plaintext material, and nothing here logs.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// KeySize is the size of the master key and of the edge key (AES-256).
const KeySize = 32

// NonceSize is the size of a GCM nonce.
const NonceSize = 12

// KeyVersion is the version of the current master key, stored with each
// ciphertext (secrets.key_version) so that the key can be rotated later.
const KeyVersion = 1

// SealVersion is the seal version of the ciphertexts this package makes
// at rest (secrets.seal_version): 1 = sealed with AdditionalData of the
// row's tenant, name and hosts. Version 0 (rows written before it) was
// sealed with no additional data; the control plane re-seals those at
// start and on `controlplane migrate`.
const SealVersion = 1

// adPrefix starts every AdditionalData encoding: a label (so the encoding
// can never be mistaken for another use of the master key) and the
// encoding's version byte.
const adPrefix = "weir secret ad\x00\x01"

// AdditionalData returns the canonical additional data that binds a secret
// at rest to its owner, name and hosts. tenant is the owning tenant's id;
// a zero (invalid) tenant means a managed, cluster-owned secret, encoded
// with its own owner tag so it never collides with any tenant. hosts are
// sorted first, so their order does not matter, but their set does.
//
// The encoding is unambiguous: prefix "weir secret ad" 0x00, version 0x01;
// owner tag 0x00 (managed) or 0x01 followed by the 16 id bytes; the name as
// a 4-byte big-endian length and its bytes; the number of hosts as 4 bytes;
// each host as a 4-byte length and its bytes.
func AdditionalData(tenant pgtype.UUID, name string, hosts []string) []byte {
	sorted := slices.Clone(hosts)
	slices.Sort(sorted)
	n := len(adPrefix) + 1 + 16 + 4 + len(name) + 4
	for _, h := range sorted {
		n += 4 + len(h)
	}
	b := make([]byte, 0, n)
	b = append(b, adPrefix...)
	if tenant.Valid {
		b = append(b, 1)
		b = append(b, tenant.Bytes[:]...)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(sorted)))
	for _, h := range sorted {
		b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
		b = append(b, h...)
	}
	return b
}

// Environment variables holding the keys.
const (
	EnvMasterKey = "WEIR_MASTER_KEY"
	EnvEdgeKey   = "WEIR_EDGE_KEY"
	// EnvConfigSigningKey holds the 32-byte seed of the Ed25519 key that
	// signs config snapshots and operator commands for edges.
	EnvConfigSigningKey = "WEIR_CONFIG_SIGNING_KEY"
)

var (
	// ErrBadKey: a key is not 32 bytes, or not base64 or hex.
	ErrBadKey = errors.New("key must be 32 bytes, base64 or hex encoded")
	// ErrDecrypt: a ciphertext is too short or does not authenticate.
	ErrDecrypt = errors.New("ciphertext does not decrypt")
	// ErrNoKey: no key is configured and dev mode is off.
	ErrNoKey = errors.New("no key configured")
)

// ParseKey decodes a 32-byte key written as hex (64 digits) or base64
// (standard or URL alphabet, with or without padding). Surrounding white
// space is ignored.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, ErrBadKey
}

// MasterKey returns the master key: WEIR_MASTER_KEY when set (read through
// getenv); else, in dev mode, the key kept in <varDir>/master.key (created
// with mode 0600 on first use); else an error wrapping ErrNoKey.
func MasterKey(getenv func(string) string, dev bool, varDir string) ([]byte, error) {
	return loadKey(getenv, EnvMasterKey, dev, filepath.Join(varDir, "master.key"), cryptoRand())
}

// EdgeKey returns the key secrets are sealed with for edges: WEIR_EDGE_KEY,
// else in dev mode <varDir>/edge.key, else an error wrapping ErrNoKey.
func EdgeKey(getenv func(string) string, dev bool, varDir string) ([]byte, error) {
	return loadKey(getenv, EnvEdgeKey, dev, filepath.Join(varDir, "edge.key"), cryptoRand())
}

// ConfigSigningKey returns the 32-byte Ed25519 seed that signs what edges
// receive over NATS: WEIR_CONFIG_SIGNING_KEY, else in dev mode
// <varDir>/config-signing.key, else an error wrapping ErrNoKey.
func ConfigSigningKey(getenv func(string) string, dev bool, varDir string) ([]byte, error) {
	return loadKey(getenv, EnvConfigSigningKey, dev, filepath.Join(varDir, "config-signing.key"), cryptoRand())
}

func loadKey(getenv func(string) string, env string, dev bool, path string, rnd io.Reader) ([]byte, error) {
	if v := getenv(env); v != "" {
		k, err := ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %s: %w", env, err)
		}
		return k, nil
	}
	if !dev {
		return nil, fmt.Errorf("secretbox: %s is not set (32 bytes, base64 or hex; or run with --dev to keep one under ./var): %w", env, ErrNoKey)
	}
	if b, err := os.ReadFile(path); err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("secretbox: %s: %w", path, err)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secretbox: read key: %w", err)
	}
	k := make([]byte, KeySize)
	if _, err := io.ReadFull(rnd, k); err != nil {
		return nil, fmt.Errorf("secretbox: new key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secretbox: key directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another process won the race
			return loadKey(getenv, env, dev, path, rnd)
		}
		return nil, fmt.Errorf("secretbox: write key: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("secretbox: write key: %w", werr)
	}
	return k, nil
}

// Box encrypts and decrypts secret values at rest under the master key. It
// is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
	rand io.Reader
}

// NewBox returns a Box under key (32 bytes); rand is the nonce source (nil:
// crypto/rand).
func NewBox(key []byte, rnd io.Reader) (*Box, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if rnd == nil {
		rnd = cryptoRand()
	}
	return &Box{aead: aead, rand: rnd}, nil
}

// Seal encrypts plaintext with a fresh nonce and authenticates ad with it;
// store ciphertext and nonce (and KeyVersion, SealVersion). ad is
// AdditionalData of the row the ciphertext goes to; new ciphertexts are
// always sealed with it.
func (b *Box) Seal(plaintext, ad []byte) (ciphertext, nonce []byte, err error) {
	nonce = make([]byte, NonceSize)
	if _, err := io.ReadFull(b.rand, nonce); err != nil {
		return nil, nil, fmt.Errorf("secretbox: nonce: %w", err)
	}
	return b.aead.Seal(nil, nonce, plaintext, ad), nonce, nil
}

// Open decrypts what Seal returned; ad must be the additional data it was
// sealed with (nil for seal version 0), so a ciphertext moved to another
// tenant, name or host list does not open. Errors wrap ErrDecrypt.
func (b *Box) Open(ciphertext, nonce, ad []byte) ([]byte, error) {
	if len(nonce) != NonceSize {
		return nil, fmt.Errorf("secretbox: nonce of %d bytes: %w", len(nonce), ErrDecrypt)
	}
	p, err := b.aead.Open(nil, nonce, ciphertext, ad)
	if err != nil {
		return nil, fmt.Errorf("secretbox: open: %w", ErrDecrypt)
	}
	return p, nil
}

// Seal encrypts plaintext for an edge: a fresh 12-byte nonce from rand, then
// the AES-256-GCM ciphertext and tag, no additional data. rand must be a
// cryptographically secure source.
func Seal(key, plaintext []byte, rnd io.Reader) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, NonceSize, NonceSize+len(plaintext)+aead.Overhead())
	if _, err := io.ReadFull(rnd, out); err != nil {
		return nil, fmt.Errorf("secretbox: nonce: %w", err)
	}
	return aead.Seal(out, out[:NonceSize], plaintext, nil), nil
}

// Open decrypts what Seal returned. Errors wrap ErrBadKey or ErrDecrypt.
func Open(key, ciphertext []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(ciphertext) < NonceSize+aead.Overhead() {
		return nil, fmt.Errorf("secretbox: ciphertext of %d bytes is too short: %w", len(ciphertext), ErrDecrypt)
	}
	p, err := aead.Open(nil, ciphertext[:NonceSize], ciphertext[NonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("secretbox: open: %w", ErrDecrypt)
	}
	return p, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key of %d bytes: %w", len(key), ErrBadKey)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return aead, nil
}
