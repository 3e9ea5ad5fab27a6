package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var key = bytes.Repeat([]byte{7}, KeySize)

func TestBoxRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := NewBox(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, nonce, err := b.Seal([]byte("sk-value"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nonce) != NonceSize || bytes.Contains(ct, []byte("sk-value")) {
		t.Fatalf("nonce %d bytes, ciphertext holds plaintext: %v", len(nonce), bytes.Contains(ct, []byte("sk-value")))
	}
	got, err := b.Open(ct, nonce)
	if err != nil || string(got) != "sk-value" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	ct[0] ^= 1
	if _, err := b.Open(ct, nonce); !errors.Is(err, ErrDecrypt) {
		t.Errorf("tampered Open = %v, want ErrDecrypt", err)
	}
	other, _ := NewBox(bytes.Repeat([]byte{8}, KeySize), nil)
	ct[0] ^= 1
	if _, err := other.Open(ct, nonce); !errors.Is(err, ErrDecrypt) {
		t.Errorf("wrong key Open = %v, want ErrDecrypt", err)
	}
}

// TestSealEdgeFormat checks the layout the edge's secrets.Open reads:
// 12-byte nonce, then AES-256-GCM ciphertext and tag, no additional data.
func TestSealEdgeFormat(t *testing.T) {
	t.Parallel()
	sealed, err := Seal(key, []byte("hello"), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(sealed) != NonceSize+5+16 {
		t.Fatalf("sealed is %d bytes", len(sealed))
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	plain, err := aead.Open(nil, sealed[:12], sealed[12:], nil)
	if err != nil || string(plain) != "hello" {
		t.Fatalf("manual open = %q, %v", plain, err)
	}
	if got, err := Open(key, sealed); err != nil || string(got) != "hello" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := Open(key, sealed[:10]); !errors.Is(err, ErrDecrypt) {
		t.Errorf("short Open = %v", err)
	}
	if _, err := Seal(key[:16], nil, rand.Reader); !errors.Is(err, ErrBadKey) {
		t.Errorf("16-byte key = %v, want ErrBadKey", err)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"hex", hex.EncodeToString(key), true},
		{"base64", base64.StdEncoding.EncodeToString(key), true},
		{"base64 raw url", base64.RawURLEncoding.EncodeToString(key), true},
		{"with newline", base64.StdEncoding.EncodeToString(key) + "\n", true},
		{"short", base64.StdEncoding.EncodeToString(key[:31]), false},
		{"garbage", "not a key", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKey(tc.in)
			if tc.ok != (err == nil) || (tc.ok && !bytes.Equal(got, key)) {
				t.Errorf("ParseKey = %x, %v; ok want %v", got, err, tc.ok)
			}
			if err != nil && strings.Contains(err.Error(), tc.in) {
				t.Errorf("error quotes the input: %v", err)
			}
		})
	}
}

func TestMasterKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	none := func(string) string { return "" }
	if _, err := MasterKey(none, false, dir); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no env, no dev = %v, want ErrNoKey", err)
	}
	k1, err := MasterKey(none, true, dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "master.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", fi, err)
	}
	k2, err := MasterKey(none, true, dir)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("dev key not kept: %v", err)
	}
	e1, err := EdgeKey(none, true, dir)
	if err != nil || bytes.Equal(e1, k1) {
		t.Fatalf("edge key %v; must differ from the master key", err)
	}
	env := func(k string) string {
		if k == EnvMasterKey {
			return hex.EncodeToString(key)
		}
		return ""
	}
	if got, err := MasterKey(env, false, dir); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("env key = %x, %v", got, err)
	}
	bad := func(string) string { return "short" }
	if _, err := MasterKey(bad, true, dir); !errors.Is(err, ErrBadKey) {
		t.Fatalf("bad env key = %v, want ErrBadKey", err)
	}
}
