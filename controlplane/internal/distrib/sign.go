package distrib

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// signedContext starts every signed message, so that a signature over
// Weir's envelope cannot be mistaken for one over anything else.
const signedContext = "weir.signed.v1\n"

// ErrNotSigned is the error of Signer.Open for a value this control
// plane did not sign (no envelope, another key, a bad signature, or the
// value of another name).
var ErrNotSigned = errors.New("not signed by this control plane")

// Signer signs what the control plane sends edges (DESIGN.md §4): every
// value of WEIR_CONFIG and every weir.cmd message travels as a
// weir.config.v1.Signed envelope whose Ed25519 signature covers the name
// (the KV key or the subject) and the payload. Edges verify it with the
// public key (--config-public-key). It is safe for concurrent use.
type Signer struct {
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

// NewSigner returns the signer of the Ed25519 private key whose 32-byte
// seed is seed (WEIR_CONFIG_SIGNING_KEY).
func NewSigner(seed []byte) (*Signer, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("distrib: the config signing key must be a %d-byte Ed25519 seed, got %d bytes", ed25519.SeedSize, len(seed))
	}
	key := ed25519.NewKeyFromSeed(seed)
	return &Signer{key: key, pub: key.Public().(ed25519.PublicKey)}, nil
}

// PublicKey is the key edges verify with.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// PublicKeyText is the public key as edges take it
// (WEIR_CONFIG_PUBLIC_KEY): standard base64 of its 32 bytes.
func (s *Signer) PublicKeyText() string { return base64.StdEncoding.EncodeToString(s.pub) }

// Seal returns the envelope of payload under name (a WEIR_CONFIG key or a
// subject), encoded. An empty payload is a tombstone in WEIR_CONFIG.
func (s *Signer) Seal(name string, payload []byte) ([]byte, error) {
	sig := ed25519.Sign(s.key, signedMessage(name, payload))
	b, err := proto.Marshal(&configv1.Signed{Payload: payload, Signature: sig})
	if err != nil {
		return nil, fmt.Errorf("distrib: sealing %s: %w", name, err)
	}
	return b, nil
}

// Open returns the payload of raw when raw is an envelope this signer
// sealed under name, and an error wrapping ErrNotSigned otherwise.
func (s *Signer) Open(name string, raw []byte) ([]byte, error) {
	var env configv1.Signed
	if err := proto.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("distrib: %s: %w (%v)", name, ErrNotSigned, err)
	}
	if len(env.GetSignature()) != ed25519.SignatureSize || !ed25519.Verify(s.pub, signedMessage(name, env.GetPayload()), env.GetSignature()) {
		return nil, fmt.Errorf("distrib: %s: %w", name, ErrNotSigned)
	}
	return env.GetPayload(), nil
}

// signedMessage is what a signature covers: the context, the name and the
// payload. Names never hold a newline (KV keys and subjects cannot).
func signedMessage(name string, payload []byte) []byte {
	m := make([]byte, 0, len(signedContext)+len(name)+1+len(payload))
	m = append(m, signedContext...)
	m = append(m, name...)
	m = append(m, '\n')
	return append(m, payload...)
}
