package distrib

import (
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/routing/natsnames"
)

// ConfigBucketConfig is WEIR_CONFIG as the control plane creates it; an edge
// creates it the same way when it is missing.
func ConfigBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ConfigBucket, History: 1, Storage: jetstream.FileStorage}
}

// ViewsBucketConfig is WEIR_VIEWS.
func ViewsBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ViewsBucket, History: 1, TTL: natsnames.ViewsMaxAge, Storage: jetstream.FileStorage}
}

// AffinityBucketConfig is WEIR_AFFINITY.
func AffinityBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.AffinityBucket, History: 1, TTL: natsnames.AffinityTTL, Storage: jetstream.FileStorage}
}

// UsageStreamConfig is WEIR_USAGE: limits retention on file storage, records
// kept UsageMaxAge and no byte or message limit; the control plane's durable
// consumer acks after commit. It must equal the control plane's copy, which
// documents the limits.
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
