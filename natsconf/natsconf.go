// Package natsconf holds what the control plane and the edges must set up
// alike on NATS: the JetStream buckets and stream both sides create (each
// creates what is missing, so the two configs must be one), and the
// nats.go options of an authenticated, secured connection
// (rules.NATSAuth, DESIGN.md §4). The names themselves are
// weir.dev/routing/natsnames; this package adds only what needs nats.go,
// which the pure routing module may not import.
package natsconf

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/routing/natsnames"
	"weir.dev/routing/rules"
)

// Every bucket and the stream are kept on replicas servers of a JetStream
// cluster (1 on a single server; 3 in a cluster, which keeps them through
// the loss of one server). A replica count below 1 means 1. Only the
// control plane creates or updates them in production (edges may not), so
// only its --nats-replicas decides; an edge creates a missing bucket with 1
// where NATS lets it (tests, a NATS of its own).
func replicas(n int) int { return max(n, 1) }

// ConfigBucketConfig is WEIR_CONFIG: the latest snapshot per key.
func ConfigBucketConfig(n int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ConfigBucket, History: 1, Storage: jetstream.FileStorage, Replicas: replicas(n)}
}

// ViewsBucketConfig is WEIR_VIEWS: each edge's member views, expiring after
// natsnames.ViewsMaxAge.
func ViewsBucketConfig(n int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.ViewsBucket, History: 1, TTL: natsnames.ViewsMaxAge, Storage: jetstream.FileStorage, Replicas: replicas(n)}
}

// AffinityBucketConfig is WEIR_AFFINITY: job affinity entries, expiring
// after natsnames.AffinityTTL.
func AffinityBucketConfig(n int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: natsnames.AffinityBucket, History: 1, TTL: natsnames.AffinityTTL, Storage: jetstream.FileStorage, Replicas: replicas(n)}
}

// UsageStreamConfig is WEIR_USAGE: limits retention on file storage with a
// duplicate window, so records stay in the stream after the control plane
// has acked them, until they are natsnames.UsageMaxAge (7 days) old.
//
// The age limit is the stream's only limit, and it is what bounds its size:
// a week of records, far longer than any outage of the control plane or
// Postgres anyone leaves unattended; the acked records kept meanwhile let a
// database restored from a backup catch up (a consumer from a start time;
// ingest is idempotent). A byte or message limit is deliberately absent:
// under limits retention acked records count against it too, so with
// DiscardOld it would silently drop records not yet ingested whenever a
// backlog outgrew it, and with DiscardNew it would refuse new records for as
// long as a week of traffic exceeded it. Disk is bounded instead by the
// JetStream server's own storage limit (max_file_store): when it is
// reached, publishes fail and the edges keep their records in their
// journals until there is room, which loses nothing. The control plane
// applies this config to an existing stream at start (CreateOrUpdateStream).
func UsageStreamConfig(n int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       natsnames.UsageStream,
		Subjects:   []string{natsnames.UsageSubjects},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: natsnames.UsageDuplicateWindow,
		MaxAge:     natsnames.UsageMaxAge,
		Replicas:   replicas(n),
	}
}

// AuthOptions are the nats.go options that authenticate and secure a
// connection as a says: credentials file, user and password, CA, client
// certificate. Whether a is acceptable is a.Check's to say.
func AuthOptions(a rules.NATSAuth) []nats.Option {
	var o []nats.Option
	if a.Creds != "" {
		o = append(o, nats.UserCredentials(a.Creds))
	}
	if a.User != "" {
		o = append(o, nats.UserInfo(a.User, a.Password))
	}
	if a.CA != "" {
		o = append(o, nats.RootCAs(a.CA))
	}
	if a.Cert != "" {
		o = append(o, nats.ClientCert(a.Cert, a.Key))
	}
	return o
}
