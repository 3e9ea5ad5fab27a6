package snapshot

import (
	"cmp"
	"encoding/json"
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

// recordRows are the rows of one owner's provider records.
type recordRows struct {
	records      []sqlc.ProviderRecord
	models       []sqlc.RecordModel
	members      []sqlc.PoolMember
	recordPrices []sqlc.RecordPrice
	memberPrices []sqlc.MemberPrice
}

// records maps the owner's records (owner NULL: the cluster's managed
// records), ordered by name. Every model, price, member and member price row
// must belong to one of the records; a pool record without members is left
// out.
func (b *builder) records(owner pgtype.UUID, in recordRows) []*configv1.ProviderRecord {
	scope := scopeOf(owner)
	recs := slices.Clone(in.records)
	slices.SortFunc(recs, func(a, b sqlc.ProviderRecord) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	byID := map[[16]byte]*configv1.ProviderRecord{}
	names := map[string]bool{}
	var out []*configv1.ProviderRecord
	for _, r := range recs {
		if !sameOwner(r.TenantID, owner) {
			b.fail("record %q: belongs to %s, not to %s", r.Name, ownerName(r.TenantID), ownerName(owner))
			continue
		}
		if !r.ID.Valid {
			b.fail("record %q: id is NULL", r.Name)
			continue
		}
		if names[r.Name] {
			b.fail("record %q: listed twice", r.Name)
			continue
		}
		names[r.Name] = true
		p := b.record(r)
		byID[r.ID.Bytes] = p
		out = append(out, p)
	}

	// Models and record prices, each ordered by model.
	models := slices.Clone(in.models)
	slices.SortFunc(models, func(a, b sqlc.RecordModel) int { return cmp.Compare(a.Model, b.Model) })
	for _, m := range models {
		p := byID[m.RecordID.Bytes]
		if p == nil || !m.RecordID.Valid {
			b.fail("model %q: its record %s is not among the records of %s", m.Model, m.RecordID.String(), ownerName(owner))
			continue
		}
		kind, ok := modelKind(m.Kind)
		if !ok {
			b.fail("record %q: model %q: unknown kind %q", p.Name, m.Model, m.Kind)
			continue
		}
		p.Models = append(p.Models, &configv1.Model{Name: m.Model, Kind: kind})
	}
	prices := slices.Clone(in.recordPrices)
	slices.SortFunc(prices, func(a, b sqlc.RecordPrice) int { return cmp.Compare(a.Model, b.Model) })
	for _, rp := range prices {
		p := byID[rp.RecordID.Bytes]
		if p == nil || !rp.RecordID.Valid {
			b.fail("price of %q: its record %s is not among the records of %s", rp.Model, rp.RecordID.String(), ownerName(owner))
			continue
		}
		p.Prices = append(p.Prices, &configv1.Price{
			Model:            rp.Model,
			InputMicros:      ptr(rp.InputMicros),
			OutputMicros:     ptr(rp.OutputMicros),
			CacheReadMicros:  optInt(rp.CacheReadMicros),
			CacheWriteMicros: optInt(rp.CacheWriteMicros),
		})
	}

	// Members, ordered by order then name, and their prices by model.
	members := slices.Clone(in.members)
	slices.SortFunc(members, func(a, b sqlc.PoolMember) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	memberByID := map[[16]byte]*configv1.Member{}
	for _, m := range members {
		p := byID[m.RecordID.Bytes]
		switch {
		case p == nil || !m.RecordID.Valid:
			b.fail("member %q: its record %s is not among the records of %s", m.Name, m.RecordID.String(), ownerName(owner))
			continue
		case m.Scope != scope:
			b.fail("record %q: member %q: belongs to scope %s, not to %s", p.Name, m.Name, m.Scope.String(), ownerName(owner))
			continue
		case !m.ID.Valid:
			b.fail("record %q: member %q: id is NULL", p.Name, m.Name)
			continue
		case p.BaseUrl != "":
			b.fail("record %q: member %q: the record is plain (it has a base_url), so it cannot have members", p.Name, m.Name)
			continue
		}
		mp := b.member(p.Name, m)
		memberByID[m.ID.Bytes] = mp
		p.Members = append(p.Members, mp)
	}
	mprices := slices.Clone(in.memberPrices)
	slices.SortFunc(mprices, func(a, b sqlc.MemberPrice) int { return cmp.Compare(a.Model, b.Model) })
	for _, mp := range mprices {
		m := memberByID[mp.MemberID.Bytes]
		if m == nil || !mp.MemberID.Valid {
			b.fail("member price of %q: its member %s is not among the members of %s", mp.Model, mp.MemberID.String(), ownerName(owner))
			continue
		}
		m.Prices = append(m.Prices, &configv1.Price{
			Model:            mp.Model,
			InputMicros:      optInt(mp.InputMicros),
			OutputMicros:     optInt(mp.OutputMicros),
			CacheReadMicros:  optInt(mp.CacheReadMicros),
			CacheWriteMicros: optInt(mp.CacheWriteMicros),
		})
	}

	// A pool with no members cannot serve anything; leaving it out keeps the
	// owner's other records routable.
	return slices.DeleteFunc(out, func(p *configv1.ProviderRecord) bool {
		return p.BaseUrl == "" && len(p.Members) == 0
	})
}

// wireFormat maps provider_records.wire_format.
func wireFormat(s string) (configv1.WireFormat, bool) { return formats.WireFormats.ParseStored(s) }

// authKind maps the auth_kind column of records and members.
func authKind(s string) (configv1.AuthKind, bool) { return formats.AuthKinds.ParseStored(s) }

// modelKind maps record_models.kind.
func modelKind(s string) (configv1.ModelKind, bool) {
	switch s {
	case "chat":
		return configv1.ModelKind_MODEL_KIND_CHAT, true
	case "embeddings":
		return configv1.ModelKind_MODEL_KIND_EMBEDDINGS, true
	}
	return configv1.ModelKind_MODEL_KIND_UNSPECIFIED, false
}

// record maps one provider record's own columns (models, prices and members
// are added by records).
func (b *builder) record(r sqlc.ProviderRecord) *configv1.ProviderRecord {
	where := fmt.Sprintf("record %q", r.Name)
	p := &configv1.ProviderRecord{
		Id:               r.ID.String(),
		Name:             r.Name,
		Managed:          !r.TenantID.Valid,
		Internal:         r.Internal,
		Preset:           r.Preset,
		KeySecret:        r.KeySecret.String,
		Limits:           limits(r.RPM, r.InputTPM, r.OutputTPM),
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
	if w, ok := wireFormat(r.WireFormat); ok {
		p.WireFormat = w
	} else {
		b.fail("%s: unknown wire_format %q", where, r.WireFormat)
	}
	switch {
	case r.Pool && r.BaseURL.Valid:
		b.fail("%s: a pool must not have a base_url", where)
	case !r.Pool && !r.BaseURL.Valid:
		b.fail("%s: a plain record needs a base_url", where)
	case !r.Pool:
		p.BaseUrl = r.BaseURL.String
	}
	kind, ok := authKind(r.AuthKind)
	if !ok {
		b.fail("%s: unknown auth_kind %q", where, r.AuthKind)
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
	var err error
	if p.Tags, err = stringMap(r.Tags); err != nil {
		b.fail("%s: tags: %v", where, err)
	}
	if p.RateLimitHeaders, err = stringMap(r.RateLimitHeaders); err != nil {
		b.fail("%s: rate_limit_headers: %v", where, err)
	}
	p.Recovery = b.recovery(where, r)
	if r.CreatedAt.Valid {
		if r.CreatedAt.InfinityModifier != pgtype.Finite {
			b.fail("%s: created_at is not a finite time", where)
		} else {
			p.CreatedAt = timestamppb.New(r.CreatedAt.Time)
		}
	}
	return p
}

// recovery maps the record's failover settings: NULL durations stay unset
// (the edge's defaults), set ones, zero included, are kept. It returns nil
// when nothing is set.
func (b *builder) recovery(where string, r sqlc.ProviderRecord) *configv1.Recovery {
	if r.MaxAttempts < 0 {
		b.fail("%s: max_attempts is negative (%d)", where, r.MaxAttempts)
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
			b.fail("%s: %s out of range (%d)", where, d.name, d.ms.Int64)
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

// member maps one pool member. NULL columns leave the optional fields unset
// so that the edge takes the record's values.
func (b *builder) member(record string, m sqlc.PoolMember) *configv1.Member {
	where := fmt.Sprintf("record %q: member %q", record, m.Name)
	mp := &configv1.Member{
		Id:         m.ID.String(),
		Name:       m.Name,
		BaseUrl:    m.BaseURL,
		KeySecret:  optText(m.KeySecret),
		Region:     optText(m.Region),
		Limits:     limits(m.RPM.Int64, m.InputTPM.Int64, m.OutputTPM.Int64),
		Order:      uint32(max(m.Order, 0)),
		Models:     cloneStrings(m.Models),
		Off:        m.Off,
		Account:    optText(m.Account),
		ApiVersion: optText(m.APIVersion),
	}
	if m.RetainsData.Valid {
		mp.RetainsData = ptr(m.RetainsData.Bool)
	}
	if m.Weight < 1 {
		b.fail("%s: weight must be at least 1, got %d", where, m.Weight)
	} else {
		mp.Weight = uint32(m.Weight)
	}
	if m.Order < 1 {
		b.fail("%s: order must be at least 1, got %d", where, m.Order)
	}
	// Auth as a whole is inherited when the member names neither a kind nor
	// a header.
	if m.AuthKind.Valid || m.AuthHeader.Valid {
		a := &configv1.Auth{
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
			if k, ok := authKind(m.AuthKind.String); ok {
				a.Kind = k
			} else {
				b.fail("%s: unknown auth_kind %q", where, m.AuthKind.String)
			}
		}
		mp.Auth = a
	}
	var err error
	if mp.Tags, err = stringMap(m.Tags); err != nil {
		b.fail("%s: tags: %v", where, err)
	}
	if mp.ModelMap, err = stringMap(m.ModelMap); err != nil {
		b.fail("%s: model_map: %v", where, err)
	}
	return mp
}

// limits returns declared per-minute limits, or nil when none is declared
// (every one 0).
func limits(rpm, inputTPM, outputTPM int64) *configv1.Limits {
	if rpm == 0 && inputTPM == 0 && outputTPM == 0 {
		return nil
	}
	return &configv1.Limits{Rpm: rpm, InputTpm: inputTPM, OutputTpm: outputTPM}
}

// stringMap decodes a jsonb object of string values; NULL, an empty column
// and {} give nil.
func stringMap(raw []byte) (map[string]string, error) {
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

// optInt returns a pointer to a non-NULL value, nil for NULL.
func optInt(v pgtype.Int8) *int64 {
	if !v.Valid {
		return nil
	}
	return ptr(v.Int64)
}

// optText returns a pointer to a non-NULL value, nil for NULL.
func optText(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	return ptr(v.String)
}

func ptr[T any](v T) *T { return &v }
