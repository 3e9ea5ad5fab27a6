// Package recordrow decodes the stored rows of provider records
// (migrations 000002: provider_records, record_models, record_prices,
// pool_members, member_prices) into the records of weir.config.v1, the shape
// the snapshot carries to the edges. It is the one decoder of those rows: the
// snapshot builder sends what it returns, and the provider service turns it
// into the admin API's specs.
//
// The meaning of each column is the schema's:
//
//   - A member column that is NULL (key_secret, region, retains_data,
//     account, api_version) leaves the optional field unset, so that the
//     member takes its record's value. A member whose auth_kind and
//     auth_header are both NULL has no Auth at all (it takes its record's
//     auth as a whole) and its other auth columns are ignored. A NULL
//     wire_format leaves the member speaking its record's format (R-FMT-4).
//     Limits whose rpm, input_tpm, output_tpm, rpd and max_in_flight all
//     come out 0 (NULL or 0) are no Limits.
//   - Recovery durations come from the *_ms columns: NULL leaves the
//     duration unset (the edge applies the ROUTING.md default); a value, 0
//     included, is set as is, so attempt_deadline_ms = 0 is a set zero
//     duration, which disables the attempt deadline (R-FAIL-9). A record with max_attempts 0 and every duration NULL has no
//     Recovery.
//   - Prices are micro-dollars per million tokens; a NULL part is an unset
//     optional field, never 0.
//   - A jsonb object of strings (tags, model_map, rate_limit_headers) that is
//     empty gives nil.
//
// A row that breaks the schema's rules (an unknown enum name, malformed
// JSON, a weight below 1, ...) is still decoded as far as it goes, the broken
// field left unset, and each problem is returned as an error that names the
// record (and member) it is about. The database's constraints keep such rows
// out; callers refuse them all the same.
package recordrow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
)

// Record decodes a provider_records row: the record's own columns. Its
// models, prices and members come from their own rows (Model, RecordPrice,
// Member). Managed is set for a row without tenant.
func Record(r sqlc.ProviderRecord) (*configv1.ProviderRecord, []error) {
	var ps problems
	ps.where = fmt.Sprintf("record %q", r.Name)
	p := &configv1.ProviderRecord{
		Id:               r.ID.String(),
		Name:             r.Name,
		Managed:          !r.TenantID.Valid,
		Internal:         r.Internal,
		Preset:           r.Preset,
		KeySecret:        r.KeySecret.String,
		Limits:           limits(r.RPM, r.InputTPM, r.OutputTPM, r.RPD, r.MaxInFlight),
		DayZone:          r.DayZone,
		Region:           r.Region,
		RetainsData:      r.RetainsData,
		AllowedRegions:   cloneStrings(r.AllowedRegions),
		DefaultMaxOutput: r.DefaultMaxOutput,
		Priority:         r.Priority,
		Account:          r.Account,
		ApiVersion:       r.APIVersion,
	}
	if r.TenantID.Valid {
		p.TenantId = r.TenantID.String()
	}
	if w, ok := formats.WireFormats.ParseStored(r.WireFormat); ok {
		p.WireFormat = w
	} else {
		ps.add("unknown wire_format %q", r.WireFormat)
	}
	switch {
	case r.Pool && r.BaseURL.Valid:
		ps.add("a pool must not have a base_url")
	case !r.Pool && !r.BaseURL.Valid:
		ps.add("a plain record needs a base_url")
	case !r.Pool:
		p.BaseUrl = r.BaseURL.String
	}
	kind, ok := formats.AuthKinds.ParseStored(r.AuthKind)
	if !ok {
		ps.add("unknown auth_kind %q", r.AuthKind)
	}
	p.Auth = &configv1.Auth{
		Kind:               kind,
		Header:             r.AuthHeader,
		AwsService:         r.AWSService,
		AwsRegion:          r.AWSRegion,
		AccessKeySecret:    r.AccessKeySecret.String,
		TokenUrl:           r.TokenURL,
		ClientId:           r.ClientID,
		ClientSecretSecret: r.ClientSecretSecret.String,
		Scopes:             cloneStrings(r.OauthScopes),
	}
	p.Tags = ps.stringMap("tags", r.Tags)
	p.RateLimitHeaders = ps.stringMap("rate_limit_headers", r.RateLimitHeaders)
	p.Recovery = ps.recovery(r)
	if r.CreatedAt.Valid {
		if r.CreatedAt.InfinityModifier != pgtype.Finite {
			ps.add("created_at is not a finite time")
		} else {
			p.CreatedAt = timestamppb.New(r.CreatedAt.Time)
		}
	}
	return p, ps.errs
}

// recovery decodes the record's failover settings: NULL durations stay
// unset, set ones, zero included, are kept. It returns nil when nothing is
// set.
func (ps *problems) recovery(r sqlc.ProviderRecord) *configv1.Recovery {
	if r.MaxAttempts < 0 {
		ps.add("max_attempts is negative (%d)", r.MaxAttempts)
	}
	rec := &configv1.Recovery{MaxAttempts: uint32(max(r.MaxAttempts, 0))}
	set := r.MaxAttempts > 0
	for _, d := range []struct {
		name string
		ms   pgtype.Int8
		dst  **durationpb.Duration
	}{
		{"call_deadline_ms", r.CallDeadlineMs, &rec.CallDeadline},
		{"attempt_deadline_ms", r.AttemptDeadlineMs, &rec.AttemptDeadline},
		{"cooldown_base_ms", r.CooldownBaseMs, &rec.CooldownBase},
		{"cooldown_max_ms", r.CooldownMaxMs, &rec.CooldownMax},
		{"max_wait_ms", r.MaxWaitMs, &rec.MaxWait},
	} {
		if !d.ms.Valid {
			continue
		}
		if d.ms.Int64 < 0 || d.ms.Int64 > math.MaxInt64/int64(time.Millisecond) {
			ps.add("%s out of range (%d)", d.name, d.ms.Int64)
			continue
		}
		*d.dst = durationpb.New(time.Duration(d.ms.Int64) * time.Millisecond)
		set = true
	}
	if !set {
		return nil
	}
	return rec
}

// Member decodes a pool_members row of the named record. Its prices come
// from their own rows (MemberPrice).
func Member(record string, m sqlc.PoolMember) (*configv1.Member, []error) {
	var ps problems
	ps.where = fmt.Sprintf("record %q: member %q", record, m.Name)
	mp := &configv1.Member{
		Id:         m.ID.String(),
		Name:       m.Name,
		BaseUrl:    m.BaseURL,
		KeySecret:  optText(m.KeySecret),
		Region:     optText(m.Region),
		Limits:     limits(m.RPM.Int64, m.InputTPM.Int64, m.OutputTPM.Int64, m.RPD.Int64, m.MaxInFlight.Int64),
		Order:      uint32(max(m.Order, 0)),
		Models:     cloneStrings(m.Models),
		Off:        m.Off,
		Account:    optText(m.Account),
		ApiVersion: optText(m.APIVersion),
	}
	if m.RetainsData.Valid {
		mp.RetainsData = &m.RetainsData.Bool
	}
	if m.WireFormat.Valid {
		if w, ok := formats.WireFormats.ParseStored(m.WireFormat.String); ok {
			mp.WireFormat = w
		} else {
			ps.add("unknown wire_format %q", m.WireFormat.String)
		}
	}
	if m.Weight < 1 {
		ps.add("weight must be at least 1, got %d", m.Weight)
	} else {
		mp.Weight = uint32(m.Weight)
	}
	if m.Order < 1 {
		ps.add("order must be at least 1, got %d", m.Order)
	}
	if m.AuthKind.Valid || m.AuthHeader.Valid {
		mp.Auth = &configv1.Auth{
			Header:             m.AuthHeader.String,
			AwsService:         m.AWSService,
			AwsRegion:          m.AWSRegion,
			AccessKeySecret:    m.AccessKeySecret.String,
			TokenUrl:           m.TokenURL,
			ClientId:           m.ClientID,
			ClientSecretSecret: m.ClientSecretSecret.String,
			Scopes:             cloneStrings(m.OauthScopes),
		}
		if m.AuthKind.Valid {
			if k, ok := formats.AuthKinds.ParseStored(m.AuthKind.String); ok {
				mp.Auth.Kind = k
			} else {
				ps.add("unknown auth_kind %q", m.AuthKind.String)
			}
		}
	}
	mp.Tags = ps.stringMap("tags", m.Tags)
	mp.ModelMap = ps.stringMap("model_map", m.ModelMap)
	return mp, ps.errs
}

// Model decodes a record_models row of the named record; the error names an
// unknown kind.
func Model(record string, m sqlc.RecordModel) (*configv1.Model, error) {
	kind, ok := ModelKind(m.Kind)
	if !ok {
		return nil, fmt.Errorf("record %q: model %q: unknown kind %q", record, m.Model, m.Kind)
	}
	return &configv1.Model{Name: m.Model, Kind: kind}, nil
}

// ModelKind is the model kind a stored record_models.kind stands for; false
// for an unknown name.
func ModelKind(s string) (configv1.ModelKind, bool) {
	switch s {
	case "chat":
		return configv1.ModelKind_MODEL_KIND_CHAT, true
	case "embeddings":
		return configv1.ModelKind_MODEL_KIND_EMBEDDINGS, true
	}
	return configv1.ModelKind_MODEL_KIND_UNSPECIFIED, false
}

// RecordPrice decodes a record_prices row (input and output are NOT NULL).
func RecordPrice(p sqlc.RecordPrice) *configv1.Price {
	return &configv1.Price{
		Model:            p.Model,
		InputMicros:      &p.InputMicros,
		OutputMicros:     &p.OutputMicros,
		CacheReadMicros:  optInt(p.CacheReadMicros),
		CacheWriteMicros: optInt(p.CacheWriteMicros),
	}
}

// MemberPrice decodes the columns of a member_prices row (of any query that
// selects them): every part may be NULL.
func MemberPrice(model string, input, output, cacheRead, cacheWrite pgtype.Int8) *configv1.Price {
	return &configv1.Price{
		Model:            model,
		InputMicros:      optInt(input),
		OutputMicros:     optInt(output),
		CacheReadMicros:  optInt(cacheRead),
		CacheWriteMicros: optInt(cacheWrite),
	}
}

// StringMap decodes a jsonb object of string values; NULL, an empty column
// and {} give nil.
func StringMap(raw []byte) (map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object of strings: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// problems collects the problems of one row, each prefixed by where.
type problems struct {
	where string
	errs  []error
}

func (ps *problems) add(format string, args ...any) {
	ps.errs = append(ps.errs, errors.New(ps.where+": "+fmt.Sprintf(format, args...)))
}

// stringMap decodes a jsonb column (StringMap), reporting it as column.
func (ps *problems) stringMap(column string, raw []byte) map[string]string {
	m, err := StringMap(raw)
	if err != nil {
		ps.add("%s: %v", column, err)
	}
	return m
}

// limits returns declared limits, or nil when none is declared (every one
// 0).
func limits(rpm, inputTPM, outputTPM, rpd, maxInFlight int64) *configv1.Limits {
	if rpm == 0 && inputTPM == 0 && outputTPM == 0 && rpd == 0 && maxInFlight == 0 {
		return nil
	}
	return &configv1.Limits{Rpm: rpm, InputTpm: inputTPM, OutputTpm: outputTPM, Rpd: rpd, MaxInFlight: maxInFlight}
}

// optInt returns a pointer to a non-NULL value, nil for NULL.
func optInt(v pgtype.Int8) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

// optText returns a pointer to a non-NULL value, nil for NULL.
func optText(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func cloneStrings(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}
