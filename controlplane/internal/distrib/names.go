package distrib

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/routing/natsnames"
)

// The JetStream objects the control plane creates, from the names both
// sides share (weir.dev/routing/natsnames).

// ConfigBucketConfig is WEIR_CONFIG as both sides create it.
func ConfigBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ConfigBucket, History: 1, Storage: jetstream.FileStorage}
}

// ViewsBucketConfig is WEIR_VIEWS as both sides create it.
func ViewsBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ViewsBucket, History: 1, TTL: natsnames.ViewsMaxAge, Storage: jetstream.FileStorage}
}

// AffinityBucketConfig is WEIR_AFFINITY as both sides create it.
func AffinityBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.AffinityBucket, History: 1, TTL: natsnames.AffinityTTL, Storage: jetstream.FileStorage}
}

// UsageStreamConfig is WEIR_USAGE as both sides create it: limits
// retention on file storage with a 2-minute duplicate window, so records
// stay in the stream after the control plane has acked them, until they are
// UsageMaxAge (7 days) old.
//
// The age limit is the stream's only limit, and it is what bounds its size:
// a week of records. Seven days is far longer than any outage of the
// control plane or Postgres that anyone leaves unattended, so a record
// ages out long after it was stored and acked; the acked records kept
// meanwhile let a database restored from a backup catch up (a consumer
// from a start time; ingest is idempotent). A byte or message
// limit is deliberately absent: under limits retention the acked records
// count against it too, so with DiscardOld it would silently drop records
// not yet ingested whenever a backlog outgrew it, and with DiscardNew it
// would refuse new records for as long as a week of traffic exceeded it. Disk is bounded instead by the JetStream server's own storage limit
// (max_file_store): when it is reached, publishes fail and the edges keep
// their records in their journals until there is room, which loses
// nothing. The edge's copy (edge/internal/distrib) must stay identical;
// the control plane applies this config to an existing stream at start
// (CreateOrUpdateStream).
func UsageStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       natsnames.UsageStream,
		Subjects:   []string{natsnames.UsageSubjects},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: natsnames.UsageDuplicateWindow,
		MaxAge:     natsnames.UsageMaxAge,
	}
}

// Buckets are the JetStream objects the control plane uses.
type Buckets struct {
	Config   jetstream.KeyValue
	Views    jetstream.KeyValue
	Affinity jetstream.KeyValue
	Usage    jetstream.Stream
}

// Setup creates every bucket and the usage stream with the settings above,
// or updates them to those settings; run again, it changes nothing. It is
// what the control plane does at start, before anything else on NATS.
func Setup(ctx context.Context, js jetstream.JetStream) (Buckets, error) {
	var b Buckets
	var err error
	if b.Config, err = js.CreateOrUpdateKeyValue(ctx, ConfigBucketConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.ConfigBucket, err)
	}
	if b.Views, err = js.CreateOrUpdateKeyValue(ctx, ViewsBucketConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.ViewsBucket, err)
	}
	if b.Affinity, err = js.CreateOrUpdateKeyValue(ctx, AffinityBucketConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.AffinityBucket, err)
	}
	if b.Usage, err = js.CreateOrUpdateStream(ctx, UsageStreamConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: stream %s: %w", natsnames.UsageStream, err)
	}
	return b, nil
}
