package distrib

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protowire"
)

// maxPutRaces bounds how often putIfNewer retries after another writer
// changed the key between its read and its write.
const maxPutRaces = 8

// tombstoneVersion is the version of a signed tombstone (an empty
// payload): nothing replaces it, since tenant ids are never reused.
const tombstoneVersion = math.MaxUint64

// putIfNewer stores payload (a snapshot of version; nil and
// tombstoneVersion for a tombstone), signed by s, under key unless the
// bucket already holds a value s signed of that version or a later one.
// A value s did not sign (forged, unsigned, signed with another key, or
// not an envelope at all) is replaced whatever version it claims: that is
// how the publisher repairs the bucket. The write is a compare-and-set on
// the key's revision, so two publishers (two control planes, or a drain
// racing a resync) can never replace a newer snapshot with an older one:
// the bucket's value only moves forward. It reports whether it wrote.
func putIfNewer(ctx context.Context, kv jetstream.KeyValue, s *Signer, key string, version uint64, payload []byte) (bool, error) {
	data, err := s.Seal(key, payload)
	if err != nil {
		return false, err
	}
	for range maxPutRaces {
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound): // absent or deleted
			_, err = kv.Create(ctx, key, data)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("distrib: create %s: %w", key, err)
			}
			return true, nil
		case err != nil:
			return false, fmt.Errorf("distrib: read %s: %w", key, err)
		}
		if cur, ok := storedVersion(s, key, e.Value()); ok && cur >= version {
			return false, nil
		}
		_, err = kv.Update(ctx, key, data, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("distrib: update %s: %w", key, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("distrib: put %s: another writer changed it %d times in a row", key, maxPutRaces)
}

// storedVersion is the version of a value of key in WEIR_CONFIG: that of
// its snapshot, or tombstoneVersion for a tombstone. ok is false for a
// value s did not sign under key, or whose payload is not a snapshot.
func storedVersion(s *Signer, key string, raw []byte) (version uint64, ok bool) {
	payload, err := s.Open(key, raw)
	if err != nil {
		return 0, false
	}
	if len(payload) == 0 {
		return tombstoneVersion, true
	}
	return snapshotVersion(payload)
}

// snapshotVersion reads field 1 (version, a varint) of a binary
// TenantSnapshot or ClusterSnapshot without decoding the rest. A value
// without the field has version 0; ok is false when the bytes are not a
// protobuf message.
func snapshotVersion(b []byte) (version uint64, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false
			}
			return v, true
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, false
		}
		b = b[n:]
	}
	return 0, true
}
