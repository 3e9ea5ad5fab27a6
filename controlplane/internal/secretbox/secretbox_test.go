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

	"github.com/jackc/pgx/v5/pgtype"
)

var key = bytes.Repeat([]byte{7}, KeySize)

func TestBoxRoundTrip(t *testing.T) {
	t.Parallel()
	b, err := NewBox(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	ad := []byte("row")
	ct, nonce, err := b.Seal([]byte("sk-value"), ad)
	if err != nil {
		t.Fatal(err)
	}
	if len(nonce) != NonceSize || bytes.Contains(ct, []byte("sk-value")) {
		t.Fatalf("nonce %d bytes, ciphertext holds plaintext: %v", len(nonce), bytes.Contains(ct, []byte("sk-value")))
	}
	got, err := b.Open(ct, nonce, ad)
	if err != nil || string(got) != "sk-value" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for _, other := range [][]byte{nil, []byte("other row")} {
		if _, err := b.Open(ct, nonce, other); !errors.Is(err, ErrDecrypt) {
			t.Errorf("Open with additional data %q = %v, want ErrDecrypt", other, err)
		}
	}
	ct[0] ^= 1
	if _, err := b.Open(ct, nonce, ad); !errors.Is(err, ErrDecrypt) {
		t.Errorf("tampered Open = %v, want ErrDecrypt", err)
	}
	other, _ := NewBox(bytes.Repeat([]byte{8}, KeySize), nil)
	ct[0] ^= 1
	if _, err := other.Open(ct, nonce, ad); !errors.Is(err, ErrDecrypt) {
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

// TestAdditionalData checks that the encoding binding a ciphertext to its
// row is canonical (host order does not matter) and unambiguous: every
// change of owner, name or host set, and every shift of bytes between
// fields, gives different additional data.
func TestAdditionalData(t *testing.T) {
	t.Parallel()
	t1 := pgtype.UUID{Bytes: [16]byte{1}, Valid: true}
	t2 := pgtype.UUID{Bytes: [16]byte{2}, Valid: true}
	zero := pgtype.UUID{Valid: true} // the nil uuid as a tenant id is not "managed"
	managed := pgtype.UUID{}
	base := AdditionalData(t1, "key", []string{"a.example", "b.example"})
	if !bytes.Equal(base, AdditionalData(t1, "key", []string{"b.example", "a.example"})) {
		t.Error("host order changes the additional data")
	}
	want := "weir secret ad\x00\x01\x01" + string(t1.Bytes[:]) +
		"\x00\x00\x00\x03key\x00\x00\x00\x02\x00\x00\x00\x09a.example\x00\x00\x00\x09b.example"
	if string(base) != want {
		t.Errorf("AdditionalData = %q, want %q", base, want)
	}
	others := map[string][]byte{
		"other tenant":    AdditionalData(t2, "key", []string{"a.example", "b.example"}),
		"managed":         AdditionalData(managed, "key", []string{"a.example", "b.example"}),
		"nil uuid tenant": AdditionalData(zero, "key", []string{"a.example", "b.example"}),
		"other name":      AdditionalData(t1, "key2", []string{"a.example", "b.example"}),
		"host dropped":    AdditionalData(t1, "key", []string{"a.example"}),
		"host added":      AdditionalData(t1, "key", []string{"a.example", "b.example", "c.example"}),
		"hosts joined":    AdditionalData(t1, "key", []string{"a.exampleb.example"}),
		"name into host":  AdditionalData(t1, "", []string{"key", "a.example", "b.example"}),
	}
	seen := map[string]string{string(base): "base"}
	for name, ad := range others {
		if prev, dup := seen[string(ad)]; dup {
			t.Errorf("%s encodes like %s", name, prev)
		}
		seen[string(ad)] = name
	}
	if bytes.Equal(AdditionalData(managed, "k", nil), AdditionalData(zero, "k", nil)) {
		t.Error("managed and the nil uuid tenant collide")
	}
}
