package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
)

// OutboxKindConfig is the outbox kind Changed writes: the config snapshot of
// the row's tenant (or of the cluster) must be rebuilt and published.
const OutboxKindConfig = "config"

// Tx is one transaction of Store.Tx. It is not safe for concurrent use.
type Tx struct {
	// Q runs queries inside the transaction.
	Q *sqlc.Queries

	actor       Actor
	changed     map[pgtype.UUID]bool
	firstTenant pgtype.UUID // first non-cluster tenant passed to Changed
	auditTenant *pgtype.UUID
	audits      []auditEntry
}

type auditEntry struct {
	action, kind, name string
	details            []byte
}

// Actor returns who makes the change.
func (t *Tx) Actor() Actor { return t.actor }

// Audit records one change in the audit log: action is a short verb
// ("create", "set", "revoke", "delete", "grant" …), objectType the
// collection ("tenants", "keys", "secrets", "budgets", "admins",
// "providers", "providers/<record>/members" …) and objectName the object's
// name, so that "<objectType>/<objectName>" is the AuditEvent target.
// details is marshalled to a JSON object (nil: none) and must never hold a
// secret value, a plaintext key or a token; an "id" field in it lets readers
// find the entry of an object by id.
//
// The row is written just before commit, attributed to the actor of Tx and
// to the tenant of the transaction: the one set with SetAuditTenant, else the
// first tenant passed to Changed, else none (a cluster-wide change). So a
// rolled-back change leaves no audit row.
func (t *Tx) Audit(ctx context.Context, action, objectType, objectName string, details any) error {
	obj := map[string]any{}
	if details != nil {
		raw, err := json.Marshal(details)
		if err != nil {
			return fmt.Errorf("store: audit details: %w", err)
		}
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &obj); err != nil {
				// Not an object: keep it under one key.
				obj = map[string]any{"value": json.RawMessage(raw)}
			}
		}
	}
	if t.actor.Procedure != "" {
		obj["procedure"] = t.actor.Procedure
	}
	if t.actor.TokenID != "" {
		obj["token_id"] = t.actor.TokenID
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("store: audit details: %w", err)
	}
	t.audits = append(t.audits, auditEntry{action: action, kind: objectType, name: objectName, details: raw})
	return nil
}

// SetAuditTenant attributes the transaction's audit rows to tenantID (the
// zero UUID: to no tenant, i.e. cluster-wide). Use it for changes that touch
// no config (admins, roles) or that change several snapshots.
func (t *Tx) SetAuditTenant(tenantID pgtype.UUID) {
	t.auditTenant = &tenantID
}

// Changed announces that the config of tenantID (the zero UUID: the
// cluster's managed records) changed: it bumps the desired revision of that
// snapshot and writes one outbox row, both inside the transaction, so the
// publisher sees the change exactly when it commits. Calling it again for
// the same tenant within one Tx does nothing, so a change writes one outbox
// row per snapshot it affects however many rows it touches.
func (t *Tx) Changed(ctx context.Context, tenantID pgtype.UUID) error {
	if t.changed[tenantID] {
		return nil
	}
	rev, err := t.Q.BumpConfigRevision(ctx, tenantID)
	if err != nil {
		return fmt.Errorf("store: bump config revision: %w", err)
	}
	payload, err := json.Marshal(map[string]any{
		"revision":  rev.DesiredRevision,
		"actor":     t.actor.Name,
		"procedure": t.actor.Procedure,
	})
	if err != nil {
		return fmt.Errorf("store: outbox payload: %w", err)
	}
	if _, err := t.Q.InsertOutbox(ctx, sqlc.InsertOutboxParams{TenantID: tenantID, Kind: OutboxKindConfig, Payload: payload}); err != nil {
		return fmt.Errorf("store: outbox: %w", err)
	}
	t.changed[tenantID] = true
	if tenantID.Valid && !t.firstTenant.Valid {
		t.firstTenant = tenantID
	}
	return nil
}

func (t *Tx) flushAudit(ctx context.Context) error {
	tenant := t.firstTenant
	if t.auditTenant != nil {
		tenant = *t.auditTenant
	}
	var admin pgtype.UUID
	if t.actor.AdminID != "" {
		u, err := ParseUUID(t.actor.AdminID)
		if err != nil {
			return fmt.Errorf("store: audit: actor id: %w", err)
		}
		admin = u
	}
	actor := t.actor.Name
	if actor == "" {
		actor = "controlplane"
	}
	for _, a := range t.audits {
		if _, err := t.Q.InsertAudit(ctx, sqlc.InsertAuditParams{
			AdminID: admin, Actor: actor, TenantID: tenant,
			Action: a.action, ObjectKind: a.kind, ObjectName: a.name, Details: a.details,
		}); err != nil {
			return fmt.Errorf("store: audit: %w", err)
		}
	}
	return nil
}
