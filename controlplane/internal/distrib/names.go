package distrib

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// NATS names: the wire contract with the edges (DESIGN.md §4). The edge's
// copy is edge/internal/distrib/names.go; change both at once.
const (
	// ConfigBucket holds "tenant.<tenant_id>" (weir.config.v1.TenantSnapshot)
	// and "cluster" (ClusterSnapshot), binary protobuf, history 1.
	ConfigBucket = "WEIR_CONFIG"
	// ViewsBucket holds "<tenant_id>.<record_id>.<member_name>.<edge_id>"
	// (weir.telemetry.v1.MemberView); entries expire after ViewsMaxAge.
	ViewsBucket = "WEIR_VIEWS"
	// AffinityBucket holds "<tenant_id>.<job_hash>" (Affinity); entries
	// expire after AffinityTTL.
	AffinityBucket = "WEIR_AFFINITY"
	// UsageStream holds call records (CallRecord) published on
	// "weir.usage.<tenant_id>" with header Nats-Msg-Id = call id.
	UsageStream = "WEIR_USAGE"
	// UsageSubjects is the stream's subject filter.
	UsageSubjects = "weir.usage.>"
	// UsageSubjectPrefix prefixes the tenant id of a call record's subject.
	UsageSubjectPrefix = "weir.usage."
	// ResetSubject carries Command{reset_member} to every edge (R-OBS-4).
	ResetSubject = "weir.cmd.reset"
	// RevokeSubject carries Command{revoke_key} to every edge.
	RevokeSubject = "weir.cmd.revoke"
	// LeaseSubject prefixes the request/reply subjects of budget leases
	// (LeaseRequest in, LeaseGrant out): an edge asks on
	// "weir.lease.request.<edge token>", the only one its NATS user may
	// publish to (natsauth), and the lease server refuses a request whose
	// edge_id is not the subject's, so an edge cannot return or renew
	// another edge's leases.
	LeaseSubject = "weir.lease.request"

	// TenantKeyPrefix prefixes a tenant id in ConfigBucket.
	TenantKeyPrefix = "tenant."
	// ClusterKey is the cluster snapshot's key in ConfigBucket.
	ClusterKey = "cluster"

	// ViewsMaxAge is how long a member view lives in ViewsBucket without a
	// refresh (the views of a stopped edge expire).
	ViewsMaxAge = 60 * time.Second
	// AffinityTTL is how long a job's last member is remembered.
	AffinityTTL = time.Hour
	// UsageDuplicateWindow is WEIR_USAGE's de-duplication window on
	// Nats-Msg-Id.
	UsageDuplicateWindow = 2 * time.Minute
	// UsageMaxAge is how long WEIR_USAGE keeps a call record: the longest
	// the control plane's usage ingest may be stopped, or behind, without
	// losing one (UsageStreamConfig).
	UsageMaxAge = 7 * 24 * time.Hour
)

// TenantKey is the ConfigBucket key of a tenant's snapshot.
func TenantKey(tenantID string) string { return TenantKeyPrefix + tenantID }

// ConfigBucketConfig is WEIR_CONFIG as both sides create it.
func ConfigBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: ConfigBucket, History: 1, Storage: jetstream.FileStorage}
}

// ViewsBucketConfig is WEIR_VIEWS as both sides create it.
func ViewsBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: ViewsBucket, History: 1, TTL: ViewsMaxAge, Storage: jetstream.FileStorage}
}

// AffinityBucketConfig is WEIR_AFFINITY as both sides create it.
func AffinityBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: AffinityBucket, History: 1, TTL: AffinityTTL, Storage: jetstream.FileStorage}
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
		Name:       UsageStream,
		Subjects:   []string{UsageSubjects},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: UsageDuplicateWindow,
		MaxAge:     UsageMaxAge,
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
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", ConfigBucket, err)
	}
	if b.Views, err = js.CreateOrUpdateKeyValue(ctx, ViewsBucketConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", ViewsBucket, err)
	}
	if b.Affinity, err = js.CreateOrUpdateKeyValue(ctx, AffinityBucketConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", AffinityBucket, err)
	}
	if b.Usage, err = js.CreateOrUpdateStream(ctx, UsageStreamConfig()); err != nil {
		return Buckets{}, fmt.Errorf("distrib: stream %s: %w", UsageStream, err)
	}
	return b, nil
}
