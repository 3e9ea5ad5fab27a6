package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Domain errors. Every error of this package that is about the request (not
// the database being down) wraps exactly one of them; match with errors.Is.
// The RPC layer maps them to Connect codes (NotFound, AlreadyExists,
// InvalidArgument, FailedPrecondition); nothing below it does.
var (
	// ErrNotFound: the object does not exist in the scope asked (pgx.ErrNoRows).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a name or key is already taken (unique violation).
	ErrConflict = errors.New("already exists")
	// ErrInvalid: the change breaks a rule of the schema (check, not-null or
	// foreign key violation on the written row, the 16-member trigger).
	ErrInvalid = errors.New("invalid")
	// ErrPrecondition: the change conflicts with stored state, e.g. deleting
	// a secret a record still names, or removing the last cluster admin.
	ErrPrecondition = errors.New("failed precondition")
)

// Error is a domain error with the meaning of the database rule involved.
// Its message is one sentence for a person and never holds a value of the
// request (PostgreSQL's Detail, which quotes values, is dropped).
type Error struct {
	// Kind is ErrNotFound, ErrConflict, ErrInvalid or ErrPrecondition.
	Kind error
	// Constraint is the PostgreSQL constraint, when one was violated.
	Constraint string
	// Field is the request field the rule is about, when known, in proto
	// field names ("name", "key", "hosts").
	Field string
	// Code is a snake_case problem code for a ValidationError ("conflict",
	// "unknown_secret", "invalid_value" …).
	Code string
	// Msg is the human-readable message.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error returns the human-readable message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns Kind and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// NotFoundf returns an ErrNotFound *Error with the given message.
func NotFoundf(msg string) error { return &Error{Kind: ErrNotFound, Code: "not_found", Msg: msg} }

// Preconditionf returns an ErrPrecondition *Error with the given message.
func Preconditionf(msg string) error {
	return &Error{Kind: ErrPrecondition, Code: "failed_precondition", Msg: msg}
}

// rule is what one constraint means.
type rule struct {
	field, code, msg string
}

// uniqueRules name the meaning of unique constraints (23505).
var uniqueRules = map[string]rule{
	"tenants_name_key":                {"name", "conflict", "a tenant of that name already exists"},
	"admins_name_key":                 {"name", "conflict", "an admin of that name already exists"},
	"admin_roles_grant_key":           {"role", "conflict", "the admin already holds that role"},
	"admin_tokens_sha256_key":         {"", "conflict", "token collision; try again"},
	"api_keys_sha256_key":             {"", "conflict", "key collision; try again"},
	"api_keys_active_name_key":        {"name", "conflict", "an active API key of that name already exists in the tenant"},
	"secrets_scope_name_key":          {"name", "conflict", "a secret of that name already exists"},
	"provider_records_scope_name_key": {"name", "conflict", "a provider record of that name already exists"},
	"pool_members_record_name_key":    {"member", "conflict", "the pool already has a member of that name"},
	"record_models_pkey":              {"models", "duplicate", "a model is listed twice"},
	"record_prices_pkey":              {"prices", "duplicate", "a model has two prices"},
	"member_prices_pkey":              {"prices", "duplicate", "a model has two prices"},
	"record_shares_pkey":              {"tenant", "conflict", "the record is already shared with the tenant"},
	"budgets_tenant_name_key":         {"name", "conflict", "a budget of that name already exists"},
}

// fkRules name the meaning of foreign keys (23503) when the written row
// names something that does not exist.
var fkRules = map[string]rule{
	"provider_records_key_secret_fkey":           {"key_secret", "unknown_secret", "the key secret is not set in the record's owner"},
	"provider_records_access_key_secret_fkey":    {"auth.access_key_secret", "unknown_secret", "the access key secret is not set in the record's owner"},
	"provider_records_client_secret_secret_fkey": {"auth.client_secret_secret", "unknown_secret", "the client secret is not set in the record's owner"},
	"pool_members_key_secret_fkey":               {"key_secret", "unknown_secret", "the member's key secret is not set in the record's owner"},
	"pool_members_access_key_secret_fkey":        {"auth.access_key_secret", "unknown_secret", "the member's access key secret is not set in the record's owner"},
	"pool_members_client_secret_secret_fkey":     {"auth.client_secret_secret", "unknown_secret", "the member's client secret is not set in the record's owner"},
	"pool_members_record_fkey":                   {"record", "not_found", "the provider record does not exist"},
	"budgets_key_fkey":                           {"key", "not_found", "the API key is not a key of the tenant"},
	"record_shares_record_fkey":                  {"record", "not_allowed", "only managed records can be shared"},
	"admin_roles_tenant_id_fkey":                 {"tenant", "not_found", "the tenant does not exist"},
	"admin_roles_admin_id_fkey":                  {"admin", "not_found", "the admin does not exist"},
}

// inUseRules name what still refers to a row being deleted (23503 raised by
// a DELETE or UPDATE of the referenced row).
var inUseRules = map[string]string{
	"provider_records_key_secret_fkey":           "the secret is still the key secret of a provider record",
	"provider_records_access_key_secret_fkey":    "the secret is still the access key secret of a provider record",
	"provider_records_client_secret_secret_fkey": "the secret is still the client secret of a provider record",
	"pool_members_key_secret_fkey":               "the secret is still the key secret of a pool member",
	"pool_members_access_key_secret_fkey":        "the secret is still the access key secret of a pool member",
	"pool_members_client_secret_secret_fkey":     "the secret is still the client secret of a pool member",
}

// checkRules name the meaning of check constraints (23514) that a request
// can break; the rest get a generic message naming the rule.
var checkRules = map[string]rule{
	"tenants_name_format":                   {"name", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"api_keys_name_format":                  {"name", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"secrets_name_format":                   {"name", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"provider_records_name_format":          {"name", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"pool_members_name_format":              {"member", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"budgets_name_format":                   {"name", "invalid_name", "name must be 1-64 of [a-z0-9_-]"},
	"admins_name_length":                    {"name", "invalid_name", "name must be 1-256 characters"},
	"admin_roles_scope_check":               {"tenant", "invalid_value", "the cluster admin role is held without a tenant, every other role with one"},
	"admin_roles_role_check":                {"role", "invalid_value", "unknown role"},
	"secrets_hosts_not_empty":               {"hosts", "required", "a secret needs at least one host"},
	"budgets_limit_nonnegative":             {"limit_nanos", "negative", "the limit must not be negative"},
	"budgets_period_check":                  {"period", "invalid_value", "period must be day, month or total"},
	"pool_members_weight_range":             {"weight", "out_of_range", "weight must be 1-10000"},
	"pool_members_tier_positive":            {"order", "out_of_range", "order must be at least 1"},
	"record_shares_managed_only":            {"record", "not_allowed", "only managed records can be shared"},
	"provider_records_plain_or_pool":        {"base_url", "invalid_value", "a plain record has a base_url and a pool none"},
	"data_rules_required_tags_object":       {"rules.required_tags", "invalid_value", "required tags must be strings"},
	"provider_records_base_url_not_empty":   {"base_url", "required", "base_url must not be empty"},
	"pool_members_base_url_not_empty":       {"base_url", "required", "base_url must not be empty"},
	"member_prices_some_part":               {"prices", "required", "a member price needs at least one part"},
	"provider_records_wire_format_check":    {"wire_format", "invalid_value", "unknown wire format"},
	"provider_records_auth_kind_check":      {"auth.kind", "invalid_value", "unknown auth kind"},
	"pool_members_auth_kind_check":          {"auth.kind", "invalid_value", "unknown auth kind"},
	"record_models_kind_check":              {"models", "invalid_value", "model kind must be chat or embeddings"},
	"provider_records_limits_nonnegative":   {"limits", "negative", "limits must not be negative"},
	"pool_members_limits_nonnegative":       {"limits", "negative", "limits must not be negative"},
	"record_prices_nonnegative":             {"prices", "negative", "prices must not be negative"},
	"member_prices_nonnegative":             {"prices", "negative", "prices must not be negative"},
	"provider_records_recovery_nonnegative": {"recovery", "negative", "recovery settings must not be negative"},
	"tenants_rpm_range":                     {"limits.rpm", "out_of_range", "rpm must be 0-100000000"},
	"tenants_max_in_flight_range":           {"limits.max_in_flight", "out_of_range", "max_in_flight must be 0-1000000"},
	"api_keys_rpm_range":                    {"limits.rpm", "out_of_range", "rpm must be 0-100000000"},
	"api_keys_max_in_flight_range":          {"limits.max_in_flight", "out_of_range", "max_in_flight must be 0-1000000"},
}

// triggerRules are the check_violations raised by triggers, whose messages
// are written for people and are used as they are.
var triggerRules = map[string]string{
	"pool_members_pool_only":            "record",
	"pool_members_max_16":               "member",
	"provider_records_pool_has_members": "base_url",
}

// MapError turns pgx.ErrNoRows into ErrNotFound and PostgreSQL integrity
// violations into ErrConflict, ErrInvalid or ErrPrecondition (as *Error,
// wrapping the original). Any other error, nil and errors that already are
// domain errors are returned unchanged.
func MapError(err error) error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &Error{Kind: ErrNotFound, Code: "not_found", Msg: "not found", Err: err}
	}
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return err
	}
	switch pg.Code {
	case "23505": // unique_violation
		r, ok := uniqueRules[pg.ConstraintName]
		if !ok {
			r = rule{"", "conflict", "the object already exists"}
		}
		return &Error{Kind: ErrConflict, Constraint: pg.ConstraintName, Field: r.field, Code: r.code, Msg: r.msg, Err: err}
	case "23503": // foreign_key_violation
		if strings.HasPrefix(pg.Message, "update or delete on table") {
			msg, ok := inUseRules[pg.ConstraintName]
			if !ok {
				msg = "the object is still in use"
			}
			return &Error{Kind: ErrPrecondition, Constraint: pg.ConstraintName, Code: "in_use", Msg: msg, Err: err}
		}
		r, ok := fkRules[pg.ConstraintName]
		if !ok {
			r = rule{"", "not_found", "the change names an object that does not exist"}
		}
		return &Error{Kind: ErrInvalid, Constraint: pg.ConstraintName, Field: r.field, Code: r.code, Msg: r.msg, Err: err}
	case "23514": // check_violation
		if field, ok := triggerRules[pg.ConstraintName]; ok {
			return &Error{Kind: ErrInvalid, Constraint: pg.ConstraintName, Field: field, Code: "not_allowed", Msg: pg.Message, Err: err}
		}
		r, ok := checkRules[pg.ConstraintName]
		if !ok {
			r = rule{"", "invalid_value", "the change breaks the rule " + pg.ConstraintName}
		}
		return &Error{Kind: ErrInvalid, Constraint: pg.ConstraintName, Field: r.field, Code: r.code, Msg: r.msg, Err: err}
	case "23502": // not_null_violation
		return &Error{Kind: ErrInvalid, Field: pg.ColumnName, Code: "required", Msg: pg.ColumnName + " is required", Err: err}
	}
	if strings.HasPrefix(pg.Code, "22") { // data_exception: out of range, bad text
		return &Error{Kind: ErrInvalid, Code: "invalid_value", Msg: "a value is out of range or malformed", Err: err}
	}
	return err
}
