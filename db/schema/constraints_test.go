package schema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"weir.dev/db/pgtest"
)

// fixture is a small world the constraint cases write next to: two tenants,
// each with a secret "k"; tenant t1 has a pool record "pool" (with one member
// "m1") and a plain record "plain"; the cluster has a managed record "shared"
// and a secret "k".
type fixture struct {
	t1, t2, pool, plain, managed, member, key2 string
}

func (f fixture) args() pgx.NamedArgs {
	return pgx.NamedArgs{"t1": f.t1, "t2": f.t2, "pool": f.pool, "plain": f.plain,
		"managed": f.managed, "member": f.member, "key2": f.key2}
}

func newFixture(t *testing.T, ctx context.Context, db *pgxpool.Pool) fixture {
	t.Helper()
	var f fixture
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		q := func(dst *string, sql string, args ...any) error {
			if dst == nil {
				_, err := tx.Exec(ctx, sql, args...)
				return err
			}
			return tx.QueryRow(ctx, sql, args...).Scan(dst)
		}
		return errors.Join(
			q(&f.t1, `INSERT INTO tenants (name) VALUES ('t1') RETURNING id::text`),
			q(&f.t2, `INSERT INTO tenants (name) VALUES ('t2') RETURNING id::text`),
			q(nil, `INSERT INTO secrets (tenant_id, name, ciphertext, nonce, hosts)
				VALUES ($1, 'k', '\x00', '\x000000000000000000000000', '{api.example.com}'),
				       ($2, 'k', '\x00', '\x000000000000000000000000', '{api.example.com}'),
				       (NULL, 'k', '\x00', '\x000000000000000000000000', '{api.example.com}')`, f.t1, f.t2),
			q(&f.pool, `INSERT INTO provider_records (tenant_id, name, pool, wire_format, key_secret)
				VALUES ($1, 'pool', true, 'openai', 'k') RETURNING id::text`, f.t1),
			q(&f.plain, `INSERT INTO provider_records (tenant_id, name, wire_format, base_url)
				VALUES ($1, 'plain', 'openai', 'https://api.example.com') RETURNING id::text`, f.t1),
			q(&f.managed, `INSERT INTO provider_records (name, pool, wire_format, key_secret)
				VALUES ('shared', true, 'anthropic', 'k') RETURNING id::text`),
			q(&f.member, `INSERT INTO pool_members (record_id, scope, name, base_url)
				VALUES ($1, $2, 'm1', 'https://a.example.com') RETURNING id::text`, f.pool, f.t1),
			q(&f.key2, `INSERT INTO api_keys (tenant_id, name, sha256)
				VALUES ($1, 'k2', sha256('k2')) RETURNING id::text`, f.t2),
		)
	})
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return f
}

// TestConstraints runs each case in its own transaction, rolled back after,
// and checks it fails on the named constraint ("" = must succeed).
func TestConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	f := newFixture(t, ctx, db)

	member := func(record, scope, name, extraCols, extraVals string) string {
		return fmt.Sprintf(`INSERT INTO pool_members (record_id, scope, name, base_url%s)
			VALUES (%s, %s, '%s', 'https://b.example.com'%s)`, extraCols, record, scope, name, extraVals)
	}
	tests := []struct {
		name, sql, wantConstraint string
	}{
		// Names.
		{"tenant name ok", `INSERT INTO tenants (name) VALUES ('a-b_09')`, ""},
		{"tenant name 64 chars", `INSERT INTO tenants (name) VALUES (repeat('a', 64))`, ""},
		{"tenant name 65 chars", `INSERT INTO tenants (name) VALUES (repeat('a', 65))`, "tenants_name_format"},
		{"tenant name empty", `INSERT INTO tenants (name) VALUES ('')`, "tenants_name_format"},
		{"tenant name upper case", `INSERT INTO tenants (name) VALUES ('Acme')`, "tenants_name_format"},
		{"tenant name space", `INSERT INTO tenants (name) VALUES ('a b')`, "tenants_name_format"},
		{"tenant name taken", `INSERT INTO tenants (name) VALUES ('t1')`, "tenants_name_key"},
		{"record name dot", `INSERT INTO provider_records (tenant_id, name, pool, wire_format) VALUES (@t1, 'a.b', true, 'openai')`, "provider_records_name_format"},
		{"member name slash", member("@pool", "@t1", "a/b", "", ""), "pool_members_name_format"},
		{"key name upper", `INSERT INTO api_keys (tenant_id, name, sha256) VALUES (@t1, 'K', sha256('x'))`, "api_keys_name_format"},
		{"secret name long", `INSERT INTO secrets (tenant_id, name, ciphertext, nonce, hosts) VALUES (@t1, repeat('s', 65), '\x00', '\x000000000000000000000000', '{h}')`, "secrets_name_format"},
		{"budget name colon", `INSERT INTO budgets (tenant_id, name, limit_nanos, period) VALUES (@t1, 'a:b', 1, 'day')`, "budgets_name_format"},

		// Unique names per owner.
		{"duplicate record name in a tenant", `INSERT INTO provider_records (tenant_id, name, pool, wire_format) VALUES (@t1, 'pool', true, 'openai')`, "provider_records_scope_name_key"},
		{"same record name in another tenant", `INSERT INTO provider_records (tenant_id, name, pool, wire_format) VALUES (@t2, 'pool', true, 'openai')`, ""},
		{"duplicate managed record name", `INSERT INTO provider_records (name, pool, wire_format) VALUES ('shared', true, 'openai')`, "provider_records_scope_name_key"},
		{"managed record named like a tenant's", `INSERT INTO provider_records (name, pool, wire_format) VALUES ('pool', true, 'openai')`, ""},
		{"duplicate member name", member("@pool", "@t1", "m1", "", ""), "pool_members_record_name_key"},
		{"duplicate managed secret", `INSERT INTO secrets (name, ciphertext, nonce, hosts) VALUES ('k', '\x00', '\x000000000000000000000000', '{h}')`, "secrets_scope_name_key"},
		{"duplicate active key name", `INSERT INTO api_keys (tenant_id, name, sha256) VALUES (@t2, 'k2', sha256('other'))`, "api_keys_active_name_key"},
		{"key name reused after revoke", `WITH r AS (UPDATE api_keys SET revoked_at = now() WHERE id = @key2)
			INSERT INTO api_keys (tenant_id, name, sha256) SELECT @t1, 'k2', sha256('other')`, ""},
		{"duplicate key hash", `INSERT INTO api_keys (tenant_id, name, sha256) VALUES (@t1, 'x', sha256('k2'))`, "api_keys_sha256_key"},
		{"key hash not sha256", `INSERT INTO api_keys (tenant_id, name, sha256) VALUES (@t1, 'x', '\x01')`, "api_keys_sha256_length"},

		// Members.
		{"weight 1", member("@pool", "@t1", "w", ", weight", ", 1"), ""},
		{"weight 10000", member("@pool", "@t1", "w", ", weight", ", 10000"), ""},
		{"weight 0", member("@pool", "@t1", "w", ", weight", ", 0"), "pool_members_weight_range"},
		{"weight 10001", member("@pool", "@t1", "w", ", weight", ", 10001"), "pool_members_weight_range"},
		{"order 0", member("@pool", "@t1", "w", `, "order"`, ", 0"), "pool_members_order_positive"},
		{"member of a plain record", member("@plain", "@t1", "w", "", ""), "pool_members_pool_only"},
		{"member scope differs from its record", member("@pool", "@t2", "w", "", ""), "pool_members_record_fkey"},
		{"member tags not strings", member("@pool", "@t1", "w", ", tags", `, '{"a": 1}'`), "pool_members_tags_object"},
		{"member auth kind", member("@pool", "@t1", "w", ", auth_kind", ", 'basic'"), "pool_members_auth_kind_check"},
		{"member secret of another tenant", member("@pool", "@t1", "w", ", key_secret", ", 'nope'"), "pool_members_key_secret_fkey"},
		{"member limits negative", member("@pool", "@t1", "w", ", rpm", ", -1"), "pool_members_limits_nonnegative"},

		// Records.
		{"plain record without base_url", `INSERT INTO provider_records (tenant_id, name, wire_format) VALUES (@t1, 'x', 'openai')`, "provider_records_plain_or_pool"},
		{"pool with a base_url", `INSERT INTO provider_records (tenant_id, name, pool, wire_format, base_url) VALUES (@t1, 'x', true, 'openai', 'https://h')`, "provider_records_plain_or_pool"},
		{"wire format", `INSERT INTO provider_records (tenant_id, name, pool, wire_format) VALUES (@t1, 'x', true, 'grpc')`, "provider_records_wire_format_check"},
		{"record secret of another owner", `INSERT INTO secrets (tenant_id, name, ciphertext, nonce, hosts) VALUES (@t2, 'only2', '\x00', '\x000000000000000000000000', '{h}');
			INSERT INTO provider_records (tenant_id, name, pool, wire_format, key_secret) VALUES (@t1, 'x', true, 'openai', 'only2')`, "provider_records_key_secret_fkey"},
		{"delete a secret in use", `DELETE FROM secrets WHERE tenant_id = @t1 AND name = 'k'`, "provider_records_key_secret_fkey"},
		{"turn a pool with members plain", `UPDATE provider_records SET pool = false, base_url = 'https://h' WHERE id = @pool`, "provider_records_pool_has_members"},
		{"turn an empty pool plain", `DELETE FROM pool_members WHERE record_id = @pool;
			UPDATE provider_records SET pool = false, base_url = 'https://h' WHERE id = @pool`, ""},
		{"record tags not an object", `UPDATE provider_records SET tags = '[]' WHERE id = @pool`, "provider_records_tags_object"},
		{"model kind", `INSERT INTO record_models (record_id, model, kind) VALUES (@pool, 'm', 'audio')`, "record_models_kind_check"},
		{"share a managed record", `INSERT INTO record_shares (record_id, tenant_id) VALUES (@managed, @t1)`, ""},
		{"share a tenant's record", `INSERT INTO record_shares (record_id, tenant_id) VALUES (@pool, @t2)`, "record_shares_record_fkey"},

		// Money.
		{"record price ok", `INSERT INTO record_prices (record_id, model, input_micros, output_micros) VALUES (@pool, 'm', 0, 0)`, ""},
		{"record price negative", `INSERT INTO record_prices (record_id, model, input_micros, output_micros) VALUES (@pool, 'm', -1, 0)`, "record_prices_nonnegative"},
		{"record cache price negative", `INSERT INTO record_prices (record_id, model, input_micros, output_micros, cache_write_micros) VALUES (@pool, 'm', 1, 1, -1)`, "record_prices_nonnegative"},
		{"member price part", `INSERT INTO member_prices (member_id, model, output_micros) VALUES (@member, 'm', 5)`, ""},
		{"member price empty", `INSERT INTO member_prices (member_id, model) VALUES (@member, 'm')`, "member_prices_some_part"},
		{"member price negative", `INSERT INTO member_prices (member_id, model, input_micros) VALUES (@member, 'm', -5)`, "member_prices_nonnegative"},
		{"budget limit 0", `INSERT INTO budgets (tenant_id, name, limit_nanos, period) VALUES (@t1, 'b', 0, 'total')`, ""},
		{"budget limit negative", `INSERT INTO budgets (tenant_id, name, limit_nanos, period) VALUES (@t1, 'b', -1, 'day')`, "budgets_limit_nonnegative"},
		{"budget period", `INSERT INTO budgets (tenant_id, name, limit_nanos, period) VALUES (@t1, 'b', 1, 'week')`, "budgets_period_check"},
		{"budget key of another tenant", `INSERT INTO budgets (tenant_id, name, limit_nanos, period, key_id) VALUES (@t1, 'b', 1, 'day', @key2)`, "budgets_key_fkey"},
		{"budget key of its tenant", `INSERT INTO budgets (tenant_id, name, limit_nanos, period, key_id) VALUES (@t2, 'b', 1, 'day', @key2)`, ""},
		{"lease overused", `INSERT INTO budgets (id, tenant_id, name, limit_nanos, period) VALUES ('00000000-0000-0000-0000-0000000000b1', @t1, 'b', 10, 'day');
			INSERT INTO budget_leases (budget_id, edge_id, granted_nanos, used_nanos, returned_nanos, expires_at)
			VALUES ('00000000-0000-0000-0000-0000000000b1', 'e', 5, 4, 2, now() + interval '1 minute')`, "budget_leases_within_grant"},

		// Admins.
		{"cluster admin on a tenant", `INSERT INTO admins (id, name) VALUES ('00000000-0000-0000-0000-0000000000a1', 'x');
			INSERT INTO admin_roles (admin_id, role, tenant_id) VALUES ('00000000-0000-0000-0000-0000000000a1', 'cluster_admin', @t1)`, "admin_roles_scope_check"},
		{"tenant admin without a tenant", `INSERT INTO admins (id, name) VALUES ('00000000-0000-0000-0000-0000000000a1', 'x');
			INSERT INTO admin_roles (admin_id, role) VALUES ('00000000-0000-0000-0000-0000000000a1', 'tenant_admin')`, "admin_roles_scope_check"},
		{"cluster admin granted twice", `INSERT INTO admins (id, name) VALUES ('00000000-0000-0000-0000-0000000000a1', 'x');
			INSERT INTO admin_roles (admin_id, role) VALUES ('00000000-0000-0000-0000-0000000000a1', 'cluster_admin'), ('00000000-0000-0000-0000-0000000000a1', 'cluster_admin')`, "admin_roles_grant_key"},
		{"unknown role", `INSERT INTO admins (id, name) VALUES ('00000000-0000-0000-0000-0000000000a1', 'x');
			INSERT INTO admin_roles (admin_id, role, tenant_id) VALUES ('00000000-0000-0000-0000-0000000000a1', 'owner', @t1)`, "admin_roles_role_check"},

		// Telemetry.
		{"call outcome", `INSERT INTO calls (call_id, tenant_id, edge_id, outcome, started_at) VALUES ('c', @t1, 'e', 'ok', now())`, "calls_outcome_check"},
		{"attempt kind", `INSERT INTO calls (call_id, tenant_id, edge_id, outcome, started_at) VALUES ('c', @t1, 'e', 'answered', now());
			INSERT INTO call_attempts (call_id, attempt_index, outcome, kind) VALUES ('c', 0, 'failed_over', 'oops')`, "call_attempts_kind_check"},

		// Cascades.
		{"delete a tenant with records, members and secrets", `DELETE FROM tenants WHERE id = @t1`, ""},
		{"delete a managed record with shares", `INSERT INTO record_shares (record_id, tenant_id) VALUES (@managed, @t1);
			DELETE FROM provider_records WHERE id = @managed`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			for _, stmt := range strings.Split(tc.sql, ";\n") {
				if _, err = tx.Exec(ctx, stmt, f.args()); err != nil {
					break
				}
			}
			checkConstraint(t, err, tc.wantConstraint)
		})
	}
}

// checkConstraint fails unless err is a violation of constraint want, or nil
// when want is "".
func checkConstraint(t *testing.T, err error, want string) {
	t.Helper()
	var pgErr *pgconn.PgError
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == "":
	case !errors.As(err, &pgErr):
		t.Fatalf("got error %v, want a violation of %s", err, want)
	case pgErr.ConstraintName != want:
		t.Fatalf("violated %q (%s: %s), want %q", pgErr.ConstraintName, pgErr.Code, pgErr.Message, want)
	}
}

// TestPoolHoldsAtMost16Members fills a pool to 16 and is refused the 17th with
// a message that says why.
func TestPoolHoldsAtMost16Members(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	f := newFixture(t, ctx, db)
	for i := 2; i <= 16; i++ { // the fixture's pool has m1
		if _, err := db.Exec(ctx, `INSERT INTO pool_members (record_id, scope, name, base_url) VALUES ($1, $2, $3, 'https://h')`,
			f.pool, f.t1, fmt.Sprintf("m%d", i)); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	_, err := db.Exec(ctx, `INSERT INTO pool_members (record_id, scope, name, base_url) VALUES ($1, $2, 'm17', 'https://h')`, f.pool, f.t1)
	checkConstraint(t, err, "pool_members_max_16")
	if want := `pool "pool" already has 16 members, the most a pool may have`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v does not say %q", err, want)
	}
	// Moving a member into the full pool is refused too.
	_, err = db.Exec(ctx, `INSERT INTO provider_records (tenant_id, name, pool, wire_format) VALUES ($1, 'other', true, 'openai');
		INSERT INTO pool_members (record_id, scope, name, base_url) SELECT id, scope, 'm17', 'https://h' FROM provider_records WHERE name = 'other';
		UPDATE pool_members SET record_id = $2 WHERE name = 'm17'`, f.t1, f.pool)
	if err == nil {
		t.Error("moving a 17th member into a full pool succeeded")
	}
}

// TestConcurrentMembersStopAt16 races many transactions adding members to
// one pool: the trigger's row lock keeps the pool at 16.
func TestConcurrentMembersStopAt16(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	f := newFixture(t, ctx, db)
	const tries = 30
	var wg sync.WaitGroup
	errs := make([]error, tries)
	start := make(chan struct{})
	for i := range tries {
		wg.Go(func() {
			<-start
			errs[i] = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO pool_members (record_id, scope, name, base_url) VALUES ($1, $2, $3, 'https://h')`,
					f.pool, f.t1, fmt.Sprintf("c%d", i))
				return err
			})
		})
	}
	close(start)
	wg.Wait()
	var refused int
	for _, err := range errs {
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
		case errors.As(err, &pgErr) && pgErr.ConstraintName == "pool_members_max_16":
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM pool_members WHERE record_id = $1`, f.pool).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 16 || refused != tries-15 {
		t.Errorf("pool has %d members and %d inserts were refused; want 16 and %d", n, refused, tries-15)
	}
}
