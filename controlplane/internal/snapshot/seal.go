package snapshot

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
)

// EdgeKeySize is the size of the edge key: AES-256.
const EdgeKeySize = 32

// edgeNonceSize is the size of the GCM nonce that prefixes every ciphertext
// sealed for edges.
const edgeNonceSize = 12

// edgeAEAD returns AES-256-GCM under the edge key.
func edgeAEAD(edgeKey []byte) (cipher.AEAD, error) {
	if len(edgeKey) != EdgeKeySize {
		return nil, fmt.Errorf("edge key must be %d bytes, got %d: %w", EdgeKeySize, len(edgeKey), ErrSecret)
	}
	block, err := aes.NewCipher(edgeKey)
	if err != nil {
		return nil, fmt.Errorf("edge key: %w: %w", ErrSecret, err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, edgeNonceSize)
	if err != nil {
		return nil, fmt.Errorf("edge key: %w: %w", ErrSecret, err)
	}
	return aead, nil
}

// sealer seals secret values for edges: AES-256-GCM under the edge key, a
// fresh 12-byte nonce read from rand prepended to the ciphertext and tag, no
// additional data. It is the format the edge's secrets.Open reads.
type sealer struct {
	aead cipher.AEAD
	rand io.Reader
}

// newSealer checks the edge key and the nonce source.
func newSealer(edgeKey []byte, rand io.Reader) (*sealer, error) {
	aead, err := edgeAEAD(edgeKey)
	if err != nil {
		return nil, err
	}
	if rand == nil {
		return nil, fmt.Errorf("no source of nonces: %w", ErrSecret)
	}
	return &sealer{aead: aead, rand: rand}, nil
}

// seal returns nonce || ciphertext || tag of plaintext.
func (s *sealer) seal(plaintext []byte) ([]byte, error) {
	out := make([]byte, edgeNonceSize, edgeNonceSize+len(plaintext)+s.aead.Overhead())
	if _, err := io.ReadFull(s.rand, out); err != nil {
		return nil, fmt.Errorf("read nonce: %w: %w", ErrSecret, err)
	}
	return s.aead.Seal(out, out[:edgeNonceSize], plaintext, nil), nil
}
