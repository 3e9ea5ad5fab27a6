package distrib

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// signedContext starts every message the control plane signs (its
// controlplane/internal/distrib/sign.go is the other half).
const signedContext = "weir.signed.v1\n"

// ErrBadSignature is the error of a value or command that is not a
// weir.config.v1.Signed envelope, or whose signature does not verify under
// the control plane's public key for its name.
var ErrBadSignature = errors.New("not signed by the control plane")

// openSigned verifies raw, a Signed envelope received under name (a
// WEIR_CONFIG key or a weir.cmd subject), with pub and returns its payload.
func openSigned(pub ed25519.PublicKey, name string, raw []byte) ([]byte, error) {
	var env configv1.Signed
	if err := proto.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("distrib: %s: %w (not an envelope)", name, ErrBadSignature)
	}
	if len(env.GetSignature()) == 0 {
		return nil, fmt.Errorf("distrib: %s: %w (unsigned)", name, ErrBadSignature)
	}
	if len(env.GetSignature()) != ed25519.SignatureSize || !ed25519.Verify(pub, signedMessage(name, env.GetPayload()), env.GetSignature()) {
		return nil, fmt.Errorf("distrib: %s: %w (bad signature)", name, ErrBadSignature)
	}
	return env.GetPayload(), nil
}

// signedMessage is what a signature covers: the context, the name and the
// payload.
func signedMessage(name string, payload []byte) []byte {
	m := make([]byte, 0, len(signedContext)+len(name)+1+len(payload))
	m = append(m, signedContext...)
	m = append(m, name...)
	m = append(m, '\n')
	return append(m, payload...)
}

// ParsePublicKey decodes WEIR_CONFIG_PUBLIC_KEY, the control plane's
// Ed25519 public key (what `controlplane config-public-key` prints): 32
// bytes as base64 (standard or URL alphabet, padded or not) or 64 hex
// digits.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*ed25519.PublicKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return ed25519.PublicKey(b), nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("distrib: the config public key decodes to %d bytes, want %d", len(b), ed25519.PublicKeySize)
			}
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, fmt.Errorf("distrib: the config public key is neither %d bytes of base64 nor hex", ed25519.PublicKeySize)
}
