package distrib

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/routing/rules"
)

// NATS names shared with the control plane (DESIGN.md §4). They are the wire
// contract: change them on both sides at once.
const (
	// ConfigBucket holds "tenant.<tenant_id>" (TenantSnapshot) and "cluster"
	// (ClusterSnapshot), binary protobuf.
	ConfigBucket = "WEIR_CONFIG"
	// ViewsBucket holds "<tenant_id>.<record_id>.<member_name>.<edge_id>"
	// (MemberView); entries expire after ViewsMaxAge.
	ViewsBucket = "WEIR_VIEWS"
	// AffinityBucket holds "<tenant_id>.<job_hash>" (Affinity); entries
	// expire after AffinityTTL.
	AffinityBucket = "WEIR_AFFINITY"
	// UsageStream takes every call record on "weir.usage.<tenant_id>" with
	// header Nats-Msg-Id = call id.
	UsageStream = "WEIR_USAGE"
	// UsageSubjectPrefix prefixes the tenant id in a call record's subject.
	UsageSubjectPrefix = "weir.usage."
	// ResetSubject carries Command{reset_member} to every edge (R-OBS-4).
	ResetSubject = "weir.cmd.reset"
	// RevokeSubject carries Command{revoke_key} to every edge.
	RevokeSubject = "weir.cmd.revoke"
	// LeaseSubject prefixes the request/reply subject of budget leases: an
	// edge asks on LeaseSubject + "." + Token(edge id), the only lease
	// subject its NATS user may publish to, so the lease server knows which
	// edge is asking (see LeaseRequestSubject).
	LeaseSubject = "weir.lease.request"

	// TenantKeyPrefix prefixes a tenant id in ConfigBucket.
	TenantKeyPrefix = "tenant."
	// ClusterKey is the cluster snapshot's key in ConfigBucket.
	ClusterKey = "cluster"
	// ManagedTenantToken stands for the tenant in the view key of a member of
	// a managed record, which belongs to no tenant (its value's tenant_id is
	// empty). Tenant ids are UUIDs, so it cannot clash with one.
	ManagedTenantToken = "cluster"

	// ViewsMaxAge is how long a view lives without a refresh.
	ViewsMaxAge = 60 * time.Second
	// AffinityTTL is how long a job's last member is remembered.
	AffinityTTL = time.Hour
	// UsageDuplicateWindow is the stream's de-duplication window.
	UsageDuplicateWindow = 2 * time.Minute
	// UsageMaxAge is how long the stream keeps a record (the control
	// plane's UsageStreamConfig explains the choice).
	UsageMaxAge = 7 * 24 * time.Hour
)

// ConfigBucketConfig is WEIR_CONFIG as the control plane creates it; an edge
// creates it the same way when it is missing.
func ConfigBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: ConfigBucket, History: 1, Storage: jetstream.FileStorage}
}

// ViewsBucketConfig is WEIR_VIEWS.
func ViewsBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: ViewsBucket, History: 1, TTL: ViewsMaxAge, Storage: jetstream.FileStorage}
}

// AffinityBucketConfig is WEIR_AFFINITY.
func AffinityBucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: AffinityBucket, History: 1, TTL: AffinityTTL, Storage: jetstream.FileStorage}
}

// UsageStreamConfig is WEIR_USAGE: limits retention on file storage, records
// kept UsageMaxAge and no byte or message limit; the control plane's durable
// consumer acks after commit. It must equal the control plane's copy, which
// documents the limits.
func UsageStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       UsageStream,
		Subjects:   []string{UsageSubjectPrefix + ">"},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: UsageDuplicateWindow,
		MaxAge:     UsageMaxAge,
	}
}

// Token makes s usable as one token of a NATS subject or KV key
// (rules.NATSToken: every byte outside [A-Za-z0-9_-] becomes '_', "" becomes
// "_").
func Token(s string) string { return rules.NATSToken(s) }

// kvSubject is the subject a KV put of key in bucket is published on.
func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

// LeaseRequestSubject is the subject the edge edgeID sends its lease
// requests on.
func LeaseRequestSubject(edgeID string) string { return LeaseSubject + "." + Token(edgeID) }
