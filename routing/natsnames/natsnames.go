// Package natsnames holds the names the control plane and the edges share
// over NATS (DESIGN.md §4): buckets, streams, subjects, keys, and how long
// entries live. They are the wire contract between the two binaries, so they
// are written once, here, and both sides import them; the JetStream
// configurations built from them stay with each side's NATS client.
//
// Every id that goes into a subject or key goes through Token first.
package natsnames

import "time"

// Buckets and streams.
const (
	// ConfigBucket holds "tenant.<tenant_id>" (weir.config.v1.TenantSnapshot)
	// and "cluster" (ClusterSnapshot), binary protobuf, history 1.
	ConfigBucket = "WEIR_CONFIG"
	// ViewsBucket holds "<tenant_id>.<record_id>.<member_name>.<edge_id>"
	// (weir.telemetry.v1.MemberView, see ViewKey); entries expire after
	// ViewsMaxAge.
	ViewsBucket = "WEIR_VIEWS"
	// AffinityBucket holds "<tenant_id>.<job_hash>" (Affinity, see
	// AffinityKey); entries expire after AffinityTTL.
	AffinityBucket = "WEIR_AFFINITY"
	// UsageStream holds call records (CallRecord) published on
	// UsageSubject(tenant) with header Nats-Msg-Id = call id.
	UsageStream = "WEIR_USAGE"
)

// Subjects.
const (
	// UsageSubjects is UsageStream's subject filter.
	UsageSubjects = UsageSubjectPrefix + ">"
	// UsageSubjectPrefix prefixes the tenant id of a call record's subject.
	UsageSubjectPrefix = "weir.usage."
	// CommandSubjects matches every operator command to the edges.
	CommandSubjects = "weir.cmd.>"
	// ResetSubject carries Command{reset_member} to every edge (R-OBS-4).
	ResetSubject = "weir.cmd.reset"
	// RevokeSubject carries Command{revoke_key} to every edge.
	RevokeSubject = "weir.cmd.revoke"
	// LeaseSubject prefixes the request/reply subjects of budget leases
	// (LeaseRequest in, LeaseGrant out): an edge asks on
	// LeaseRequestSubject(edge id), the only one its NATS user may publish
	// to, and the lease server refuses a request whose edge_id is not the
	// subject's, so an edge cannot return or renew another edge's leases.
	LeaseSubject = "weir.lease.request"
	// LeaseSubjects matches every edge's lease request subject.
	LeaseSubjects = LeaseSubject + ".*"
)

// Keys.
const (
	// TenantKeyPrefix prefixes a tenant id in ConfigBucket.
	TenantKeyPrefix = "tenant."
	// ClusterKey is the cluster snapshot's key in ConfigBucket.
	ClusterKey = "cluster"
	// ManagedTenantToken stands for the tenant in the view key of a member of
	// a managed record, which belongs to no tenant (its value's tenant_id is
	// empty). Tenant ids are UUIDs, so it cannot clash with one.
	ManagedTenantToken = "cluster"
)

// Lifetimes.
const (
	// ViewsMaxAge is how long a member view lives in ViewsBucket without a
	// refresh (the views of a stopped edge expire).
	ViewsMaxAge = 60 * time.Second
	// AffinityTTL is how long a job's last member is remembered.
	AffinityTTL = time.Hour
	// UsageDuplicateWindow is UsageStream's de-duplication window on
	// Nats-Msg-Id.
	UsageDuplicateWindow = 2 * time.Minute
	// UsageMaxAge is how long UsageStream keeps a call record: the longest
	// the control plane's usage ingest may be stopped, or behind, without
	// losing one (the control plane's UsageStreamConfig explains the choice).
	UsageMaxAge = 7 * 24 * time.Hour
)

// TenantKey is the ConfigBucket key of a tenant's snapshot.
func TenantKey(tenantID string) string { return TenantKeyPrefix + tenantID }

// UsageSubject is the subject the call records of tenantID are published on.
func UsageSubject(tenantID string) string { return UsageSubjectPrefix + Token(tenantID) }

// LeaseRequestSubject is the subject the edge edgeID sends its lease
// requests on.
func LeaseRequestSubject(edgeID string) string { return LeaseSubject + "." + Token(edgeID) }

// ViewKey is the ViewsBucket key of a member's view as the edge edgeID
// publishes it. tenantID is empty for a managed record (ManagedTenantToken
// stands for it).
func ViewKey(tenantID, recordID, member, edgeID string) string {
	if tenantID == "" {
		tenantID = ManagedTenantToken
	}
	return Token(tenantID) + "." + Token(recordID) + "." + Token(member) + "." + Token(edgeID)
}

// AffinityKey is the AffinityBucket key of a job.
func AffinityKey(tenantID, jobHash string) string { return Token(tenantID) + "." + Token(jobHash) }

// KVSubject is the subject a KV put of key in bucket is published on.
func KVSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

// KVStream is the name of the JetStream stream behind the KV bucket.
func KVStream(bucket string) string { return "KV_" + bucket }

// Token makes s usable as one token of a NATS subject or KV key: every
// byte outside [A-Za-z0-9_-] becomes '_', and "" becomes "_". Ids the control
// plane issues (UUIDs, names of [a-z0-9_-]) pass unchanged. Edges and the
// control plane build the keys and subjects they share with it (view keys,
// lease subjects), so both sides agree on them.
func Token(s string) string {
	if s == "" {
		return "_"
	}
	i := 0
	for i < len(s) && tokenByte(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if !tokenByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
