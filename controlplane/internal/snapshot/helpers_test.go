package snapshot

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"weir.dev/db/sqlc"
)

// Kinds of test ids: the kind is the uuid's fourth byte, so ids read as
// "0000000K-0000-0000-0000-0000000000NN".
const (
	kTenant byte = 1 + iota
	kRecord
	kMember
	kKey
	kBudget
	kSecret
)

// id returns a fixed uuid of a kind and number.
func id(kind, n byte) pgtype.UUID {
	var u pgtype.UUID
	u.Bytes[3], u.Bytes[15], u.Valid = kind, n, true
	return u
}

func ts(s string) pgtype.Timestamptz {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

func text(s string) pgtype.Text  { return pgtype.Text{String: s, Valid: true} }
func i8(v int64) pgtype.Int8     { return pgtype.Int8{Int64: v, Valid: true} }
func boolean(v bool) pgtype.Bool { return pgtype.Bool{Bool: v, Valid: true} }

// jsonb encodes a map as a jsonb column holds it.
func jsonb(m map[string]string) []byte {
	if m == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// testNow is the time every test snapshot describes.
func testNow() time.Time { return time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC) }

// newTenant returns a tenant row.
func newTenant(n byte, name string) sqlc.Tenant {
	return sqlc.Tenant{ID: id(kTenant, n), Name: name, CreatedAt: ts("2025-01-01T00:00:00Z"), UpdatedAt: ts("2025-01-01T00:00:00Z")}
}

// newRecord returns a record row holding the schema's defaults: plain when
// baseURL is set, else a pool. owner NULL makes a managed record.
func newRecord(n byte, owner pgtype.UUID, name, wire, baseURL string) sqlc.ProviderRecord {
	r := sqlc.ProviderRecord{
		ID:               id(kRecord, n),
		TenantID:         owner,
		Scope:            scopeOf(owner),
		Name:             name,
		WireFormat:       wire,
		AuthKind:         "api_key",
		OauthScopes:      []string{},
		Tags:             []byte("{}"),
		AllowedRegions:   []string{},
		RateLimitHeaders: []byte("{}"),
		CreatedAt:        ts("2025-03-01T00:00:00Z"),
		UpdatedAt:        ts("2025-03-01T00:00:00Z"),
	}
	if baseURL == "" {
		r.Pool = true
	} else {
		r.BaseURL = text(baseURL)
	}
	return r
}

// newMember returns a member row holding the schema's defaults: every
// inheritable column NULL, weight 1, order 1.
func newMember(n byte, rec sqlc.ProviderRecord, name, baseURL string) sqlc.PoolMember {
	return sqlc.PoolMember{
		ID:          id(kMember, n),
		RecordID:    rec.ID,
		Scope:       rec.Scope,
		Name:        name,
		BaseURL:     baseURL,
		OauthScopes: []string{},
		Tags:        []byte("{}"),
		Weight:      1,
		Order:       1,
		ModelMap:    []byte("{}"),
		Models:      []string{},
		CreatedAt:   ts("2025-03-02T00:00:00Z"),
		UpdatedAt:   ts("2025-03-02T00:00:00Z"),
	}
}

// newKey returns an active key row whose hash is derived from its name.
func newKey(n byte, owner pgtype.UUID, name string) sqlc.APIKey {
	sum := sha256.Sum256([]byte("weir-test-key-" + name + string(rune('0'+n))))
	return sqlc.APIKey{
		ID:             id(kKey, n),
		TenantID:       owner,
		Name:           name,
		SHA256:         sum[:],
		AllowedModels:  []string{},
		AllowedRecords: []string{},
		Regions:        []string{},
		CreatedAt:      ts("2025-02-01T00:00:00Z"),
	}
}

// priceRow is a record price with whole input, output and cache read parts.
func priceRow(rec sqlc.ProviderRecord, model string, in, out, cacheRead int64) sqlc.RecordPrice {
	return sqlc.RecordPrice{RecordID: rec.ID, Model: model, InputMicros: in, OutputMicros: out, CacheReadMicros: i8(cacheRead)}
}

// testMasterKey seals the secrets of test rows, standing in for the control
// plane's master key.
func testMasterKey() []byte { return bytes.Repeat([]byte{0xA5}, 32) }

// testEdgeKey is the edge key of the tests.
func testEdgeKey() []byte {
	k := make([]byte, EdgeKeySize)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// testRand is the deterministic nonce source of the tests.
func testRand() io.Reader {
	return rand.NewChaCha8([32]byte([]byte("weir snapshot golden nonces 0001")))
}

func gcm(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// masterSeal seals a value under the test master key as a secrets row holds
// it: ciphertext and nonce in their own columns (the nonce derived from the
// name, so rows are fixed).
func masterSeal(value, name string) (ciphertext, nonce []byte) {
	sum := sha256.Sum256([]byte("nonce:" + name))
	nonce = sum[:12]
	return gcm(testMasterKey()).Seal(nil, nonce, []byte(value), nil), nonce
}

// testOpen opens a secret row under the test master key.
func testOpen(row sqlc.Secret) ([]byte, error) {
	if len(row.Nonce) != 12 {
		return nil, errors.New("bad nonce length")
	}
	return gcm(testMasterKey()).Open(nil, row.Nonce, row.Ciphertext, nil)
}

// edgeOpen opens a ciphertext sealed for edges, as the edge's secrets.Open
// does: the 12-byte nonce first, AES-256-GCM, no additional data.
func edgeOpen(edgeKey, sealed []byte) ([]byte, error) {
	if len(sealed) < 12+16 {
		return nil, errors.New("ciphertext too short")
	}
	return gcm(edgeKey).Open(nil, sealed[:12], sealed[12:], nil)
}

// newSecret returns a secret row holding value sealed under the test master
// key.
func newSecret(n byte, owner pgtype.UUID, name, value string, hosts ...string) sqlc.Secret {
	ct, nonce := masterSeal(value, name)
	return sqlc.Secret{
		ID:         id(kSecret, n),
		TenantID:   owner,
		Scope:      scopeOf(owner),
		Name:       name,
		Ciphertext: ct,
		Nonce:      nonce,
		KeyVersion: 1,
		Hosts:      hosts,
		CreatedAt:  ts("2025-01-15T00:00:00Z"),
		UpdatedAt:  ts("2025-01-15T00:00:00Z"),
	}
}

// marshalGolden is the golden form of a snapshot: protojson with the proto
// field names, re-indented by encoding/json so that the output does not
// depend on protojson's deliberately unstable spacing, with a final newline.
func marshalGolden(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func ptr[T any](v T) *T { return &v }
