package provider

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
)

// This file maps between the database rows (migrations 000002) and the
// admin API's ProviderSpec and PoolMemberSpec. The snapshot builder reads
// the same rows; the meaning of each column (NULL = inherit on members,
// NULL durations = the ROUTING.md default) is the schema's.

// specFromRow returns the spec a stored record row, its models and its
// prices describe.
func specFromRow(r sqlc.ProviderRecord, models []sqlc.RecordModel, prices []sqlc.RecordPrice) (*adminv1.ProviderSpec, error) {
	s := &adminv1.ProviderSpec{
		BaseUrl:          r.BaseURL.String,
		KeySecret:        r.KeySecret.String,
		Region:           r.Region,
		RetainsData:      r.RetainsData,
		AllowedRegions:   nilIfEmpty(r.AllowedRegions),
		DefaultMaxOutput: r.DefaultMaxOutput,
		Priority:         r.Priority,
		Internal:         r.Internal,
		Account:          r.Account,
		ApiVersion:       r.APIVersion,
	}
	var ok bool
	if s.WireFormat, ok = ParseWire(r.WireFormat); !ok {
		return nil, fmt.Errorf("record %q: unknown wire_format %q", r.Name, r.WireFormat)
	}
	kind, ok := parseAuthKind(r.AuthKind)
	if !ok {
		return nil, fmt.Errorf("record %q: unknown auth_kind %q", r.Name, r.AuthKind)
	}
	s.Auth = &configv1.Auth{
		Kind: kind, Header: r.AuthHeader, AwsService: r.AWSService, AwsRegion: r.AWSRegion,
		AccessKeySecret: r.AccessKeySecret.String, TokenUrl: r.TokenURL, ClientId: r.ClientID,
		ClientSecretSecret: r.ClientSecretSecret.String, Scopes: nilIfEmpty(r.OauthScopes),
	}
	if r.RPM != 0 || r.InputTPM != 0 || r.OutputTPM != 0 {
		s.Limits = &configv1.Limits{Rpm: r.RPM, InputTpm: r.InputTPM, OutputTpm: r.OutputTPM}
	}
	var err error
	if s.Tags, err = decodeMap(r.Tags); err != nil {
		return nil, fmt.Errorf("record %q: tags: %w", r.Name, err)
	}
	if s.RateLimitHeaders, err = decodeMap(r.RateLimitHeaders); err != nil {
		return nil, fmt.Errorf("record %q: rate_limit_headers: %w", r.Name, err)
	}
	rec := &configv1.Recovery{MaxAttempts: uint32(max(r.MaxAttempts, 0))}
	set := r.MaxAttempts > 0
	for _, d := range []struct {
		ms  pgtype.Int8
		dst **durationpb.Duration
	}{
		{r.CallDeadlineMs, &rec.CallDeadline},
		{r.AttemptDeadlineMs, &rec.AttemptDeadline},
		{r.CooldownBaseMs, &rec.CooldownBase},
		{r.CooldownMaxMs, &rec.CooldownMax},
		{r.MaxWaitMs, &rec.MaxWait},
	} {
		if d.ms.Valid {
			*d.dst = durationpb.New(time.Duration(d.ms.Int64) * time.Millisecond)
			set = true
		}
	}
	if set {
		s.Recovery = rec
	}
	for _, m := range models {
		kind := configv1.ModelKind_MODEL_KIND_CHAT
		if m.Kind == "embeddings" {
			kind = configv1.ModelKind_MODEL_KIND_EMBEDDINGS
		}
		s.Models = append(s.Models, &configv1.Model{Name: m.Model, Kind: kind})
	}
	for _, p := range prices {
		s.Prices = append(s.Prices, &configv1.Price{
			Model: p.Model, InputMicros: ptr(p.InputMicros), OutputMicros: ptr(p.OutputMicros),
			CacheReadMicros: optInt(p.CacheReadMicros), CacheWriteMicros: optInt(p.CacheWriteMicros),
		})
	}
	return s, nil
}

// memberSpecFromRow returns the spec a stored member row and its prices
// describe.
func memberSpecFromRow(m sqlc.PoolMember, prices []*configv1.Price) (*adminv1.PoolMemberSpec, error) {
	s := &adminv1.PoolMemberSpec{
		BaseUrl:    m.BaseURL,
		KeySecret:  optText(m.KeySecret),
		Region:     optText(m.Region),
		Weight:     uint32(max(m.Weight, 1)),
		Order:      uint32(max(m.Order, 1)),
		Models:     nilIfEmpty(m.Models),
		Off:        m.Off,
		Account:    optText(m.Account),
		ApiVersion: optText(m.APIVersion),
		Prices:     prices,
	}
	if m.RetainsData.Valid {
		s.RetainsData = ptr(m.RetainsData.Bool)
	}
	if m.AuthKind.Valid || m.AuthHeader.Valid {
		kind := configv1.AuthKind_AUTH_KIND_UNSPECIFIED
		if m.AuthKind.Valid {
			k, ok := parseAuthKind(m.AuthKind.String)
			if !ok {
				return nil, fmt.Errorf("member %q: unknown auth_kind %q", m.Name, m.AuthKind.String)
			}
			kind = k
		}
		s.Auth = &configv1.Auth{
			Kind: kind, Header: m.AuthHeader.String, AwsService: m.AWSService, AwsRegion: m.AWSRegion,
			AccessKeySecret: m.AccessKeySecret.String, TokenUrl: m.TokenURL, ClientId: m.ClientID,
			ClientSecretSecret: m.ClientSecretSecret.String, Scopes: nilIfEmpty(m.OauthScopes),
		}
	}
	if m.RPM.Valid || m.InputTPM.Valid || m.OutputTPM.Valid {
		s.Limits = &configv1.Limits{Rpm: m.RPM.Int64, InputTpm: m.InputTPM.Int64, OutputTpm: m.OutputTPM.Int64}
	}
	var err error
	if s.Tags, err = decodeMap(m.Tags); err != nil {
		return nil, fmt.Errorf("member %q: tags: %w", m.Name, err)
	}
	if s.ModelMap, err = decodeMap(m.ModelMap); err != nil {
		return nil, fmt.Errorf("member %q: model_map: %w", m.Name, err)
	}
	return s, nil
}

// memberPriceFromRow converts one member price row.
func memberPriceFromRow(model string, in, out, cr, cw pgtype.Int8) *configv1.Price {
	return &configv1.Price{Model: model, InputMicros: optInt(in), OutputMicros: optInt(out), CacheReadMicros: optInt(cr), CacheWriteMicros: optInt(cw)}
}

// recordColumns are the columns of provider_records a spec sets, shared by
// the create and update parameters.
type recordColumns struct {
	Internal           bool
	Pool               bool
	WireFormat         string
	Preset             string
	BaseURL            pgtype.Text
	AuthKind           string
	AuthHeader         string
	AWSService         string
	AWSRegion          string
	AccessKeySecret    pgtype.Text
	TokenURL           string
	ClientID           string
	ClientSecretSecret pgtype.Text
	OauthScopes        []string
	KeySecret          pgtype.Text
	RPM                int64
	InputTPM           int64
	OutputTPM          int64
	Region             string
	RetainsData        bool
	Tags               []byte
	AllowedRegions     []string
	RateLimitHeaders   []byte
	MaxAttempts        int32
	CallDeadlineMs     pgtype.Int8
	AttemptDeadlineMs  pgtype.Int8
	CooldownBaseMs     pgtype.Int8
	CooldownMaxMs      pgtype.Int8
	MaxWaitMs          pgtype.Int8
	DefaultMaxOutput   int64
	Priority           int32
	Account            string
	APIVersion         string
}

// recordColumnsOf returns the columns of a validated record. A validated
// spec fits every column (names, ranges and durations are checked).
func recordColumnsOf(r *Record, preset string) (recordColumns, error) {
	s := r.Spec
	a := s.GetAuth()
	c := recordColumns{
		Internal:           s.GetInternal(),
		Pool:               r.Pool,
		WireFormat:         WireName(s.GetWireFormat()),
		Preset:             preset,
		AuthKind:           authKindName(a.GetKind()),
		AuthHeader:         a.GetHeader(),
		AWSService:         a.GetAwsService(),
		AWSRegion:          a.GetAwsRegion(),
		AccessKeySecret:    text(a.GetAccessKeySecret()),
		TokenURL:           a.GetTokenUrl(),
		ClientID:           a.GetClientId(),
		ClientSecretSecret: text(a.GetClientSecretSecret()),
		OauthScopes:        emptyIfNil(a.GetScopes()),
		KeySecret:          text(s.GetKeySecret()),
		RPM:                s.GetLimits().GetRpm(),
		InputTPM:           s.GetLimits().GetInputTpm(),
		OutputTPM:          s.GetLimits().GetOutputTpm(),
		Region:             s.GetRegion(),
		RetainsData:        s.GetRetainsData(),
		AllowedRegions:     emptyIfNil(s.GetAllowedRegions()),
		MaxAttempts:        int32(min(s.GetRecovery().GetMaxAttempts(), math.MaxInt32)),
		DefaultMaxOutput:   s.GetDefaultMaxOutput(),
		Priority:           s.GetPriority(),
		Account:            s.GetAccount(),
		APIVersion:         s.GetApiVersion(),
	}
	if c.AuthKind == "" {
		c.AuthKind = "none" // only for an auth no endpoint uses; Validate requires a kind otherwise
	}
	if !r.Pool {
		c.BaseURL = text(s.GetBaseUrl())
	}
	var err error
	if c.Tags, err = encodeMap(s.GetTags()); err != nil {
		return c, err
	}
	if c.RateLimitHeaders, err = encodeMap(s.GetRateLimitHeaders()); err != nil {
		return c, err
	}
	rec := s.GetRecovery()
	c.CallDeadlineMs = millis(rec.GetCallDeadline())
	c.AttemptDeadlineMs = millis(rec.GetAttemptDeadline())
	c.CooldownBaseMs = millis(rec.GetCooldownBase())
	c.CooldownMaxMs = millis(rec.GetCooldownMax())
	c.MaxWaitMs = millis(rec.GetMaxWait())
	return c, nil
}

func (c recordColumns) create(tenant pgtype.UUID, name string) sqlc.CreateProviderRecordParams {
	return sqlc.CreateProviderRecordParams{
		TenantID: tenant, Name: name, Internal: c.Internal, Pool: c.Pool, WireFormat: c.WireFormat,
		Preset: c.Preset, BaseURL: c.BaseURL, AuthKind: c.AuthKind, AuthHeader: c.AuthHeader,
		AWSService: c.AWSService, AWSRegion: c.AWSRegion, AccessKeySecret: c.AccessKeySecret,
		TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecretSecret: c.ClientSecretSecret,
		OauthScopes: c.OauthScopes, KeySecret: c.KeySecret, RPM: c.RPM, InputTPM: c.InputTPM,
		OutputTPM: c.OutputTPM, Region: c.Region, RetainsData: c.RetainsData, Tags: c.Tags,
		AllowedRegions: c.AllowedRegions, RateLimitHeaders: c.RateLimitHeaders, MaxAttempts: c.MaxAttempts,
		CallDeadlineMs: c.CallDeadlineMs, AttemptDeadlineMs: c.AttemptDeadlineMs, CooldownBaseMs: c.CooldownBaseMs,
		CooldownMaxMs: c.CooldownMaxMs, MaxWaitMs: c.MaxWaitMs, DefaultMaxOutput: c.DefaultMaxOutput,
		Priority: c.Priority, Account: c.Account, APIVersion: c.APIVersion,
	}
}

func (c recordColumns) update(tenant pgtype.UUID, name string) sqlc.UpdateProviderRecordParams {
	return sqlc.UpdateProviderRecordParams{
		TenantID: tenant, Name: name, Internal: c.Internal, Pool: c.Pool, WireFormat: c.WireFormat,
		Preset: c.Preset, BaseURL: c.BaseURL, AuthKind: c.AuthKind, AuthHeader: c.AuthHeader,
		AWSService: c.AWSService, AWSRegion: c.AWSRegion, AccessKeySecret: c.AccessKeySecret,
		TokenURL: c.TokenURL, ClientID: c.ClientID, ClientSecretSecret: c.ClientSecretSecret,
		OauthScopes: c.OauthScopes, KeySecret: c.KeySecret, RPM: c.RPM, InputTPM: c.InputTPM,
		OutputTPM: c.OutputTPM, Region: c.Region, RetainsData: c.RetainsData, Tags: c.Tags,
		AllowedRegions: c.AllowedRegions, RateLimitHeaders: c.RateLimitHeaders, MaxAttempts: c.MaxAttempts,
		CallDeadlineMs: c.CallDeadlineMs, AttemptDeadlineMs: c.AttemptDeadlineMs, CooldownBaseMs: c.CooldownBaseMs,
		CooldownMaxMs: c.CooldownMaxMs, MaxWaitMs: c.MaxWaitMs, DefaultMaxOutput: c.DefaultMaxOutput,
		Priority: c.Priority, Account: c.Account, APIVersion: c.APIVersion,
	}
}

// memberColumns are the columns of pool_members a member spec sets.
type memberColumns struct {
	Preset             string
	BaseURL            string
	AuthKind           pgtype.Text
	AuthHeader         pgtype.Text
	AWSService         string
	AWSRegion          string
	AccessKeySecret    pgtype.Text
	TokenURL           string
	ClientID           string
	ClientSecretSecret pgtype.Text
	OauthScopes        []string
	KeySecret          pgtype.Text
	Region             pgtype.Text
	RetainsData        pgtype.Bool
	Tags               []byte
	RPM                pgtype.Int8
	InputTPM           pgtype.Int8
	OutputTPM          pgtype.Int8
	Weight             int32
	Order              int32
	ModelMap           []byte
	Models             []string
	Off                bool
	Account            pgtype.Text
	APIVersion         pgtype.Text
}

// memberColumnsOf returns the columns of a validated member. A member that
// names neither an auth kind nor a header stores both NULL (it inherits the
// record's auth); one that declares no limit stores all three NULL.
func memberColumnsOf(s *adminv1.PoolMemberSpec, preset string) (memberColumns, error) {
	a := s.GetAuth()
	c := memberColumns{
		Preset:             preset,
		BaseURL:            s.GetBaseUrl(),
		AWSService:         a.GetAwsService(),
		AWSRegion:          a.GetAwsRegion(),
		AccessKeySecret:    text(a.GetAccessKeySecret()),
		TokenURL:           a.GetTokenUrl(),
		ClientID:           a.GetClientId(),
		ClientSecretSecret: text(a.GetClientSecretSecret()),
		OauthScopes:        emptyIfNil(a.GetScopes()),
		KeySecret:          optionalText(s.KeySecret),
		Region:             optionalText(s.Region),
		Weight:             int32(max(s.GetWeight(), 1)),
		Order:              int32(max(s.GetOrder(), 1)),
		Models:             emptyIfNil(s.GetModels()),
		Off:                s.GetOff(),
		Account:            optionalText(s.Account),
		APIVersion:         optionalText(s.ApiVersion),
	}
	if memberHasOwnAuth(a) {
		if k := authKindName(a.GetKind()); k != "" {
			c.AuthKind = pgtype.Text{String: k, Valid: true}
		}
		c.AuthHeader = pgtype.Text{String: a.GetHeader(), Valid: true}
	}
	if s.RetainsData != nil {
		c.RetainsData = pgtype.Bool{Bool: *s.RetainsData, Valid: true}
	}
	if declaresLimits(s.GetLimits()) {
		l := s.GetLimits()
		c.RPM = pgtype.Int8{Int64: l.GetRpm(), Valid: true}
		c.InputTPM = pgtype.Int8{Int64: l.GetInputTpm(), Valid: true}
		c.OutputTPM = pgtype.Int8{Int64: l.GetOutputTpm(), Valid: true}
	}
	var err error
	if c.Tags, err = encodeMap(s.GetTags()); err != nil {
		return c, err
	}
	if c.ModelMap, err = encodeMap(s.GetModelMap()); err != nil {
		return c, err
	}
	return c, nil
}

func (c memberColumns) add(tenant pgtype.UUID, record, name string) sqlc.AddPoolMemberParams {
	return sqlc.AddPoolMemberParams{
		TenantID: tenant, RecordName: record, Name: name, Preset: c.Preset, BaseURL: c.BaseURL,
		AuthKind: c.AuthKind, AuthHeader: c.AuthHeader, AWSService: c.AWSService, AWSRegion: c.AWSRegion,
		AccessKeySecret: c.AccessKeySecret, TokenURL: c.TokenURL, ClientID: c.ClientID,
		ClientSecretSecret: c.ClientSecretSecret, OauthScopes: c.OauthScopes, KeySecret: c.KeySecret,
		Region: c.Region, RetainsData: c.RetainsData, Tags: c.Tags, RPM: c.RPM, InputTPM: c.InputTPM,
		OutputTPM: c.OutputTPM, Weight: c.Weight, Order: c.Order, ModelMap: c.ModelMap, Models: c.Models,
		Off: c.Off, Account: c.Account, APIVersion: c.APIVersion,
	}
}

func (c memberColumns) update(tenant pgtype.UUID, record, name string) sqlc.UpdatePoolMemberParams {
	return sqlc.UpdatePoolMemberParams{
		TenantID: tenant, RecordName: record, Name: name, Preset: c.Preset, BaseURL: c.BaseURL,
		AuthKind: c.AuthKind, AuthHeader: c.AuthHeader, AWSService: c.AWSService, AWSRegion: c.AWSRegion,
		AccessKeySecret: c.AccessKeySecret, TokenURL: c.TokenURL, ClientID: c.ClientID,
		ClientSecretSecret: c.ClientSecretSecret, OauthScopes: c.OauthScopes, KeySecret: c.KeySecret,
		Region: c.Region, RetainsData: c.RetainsData, Tags: c.Tags, RPM: c.RPM, InputTPM: c.InputTPM,
		OutputTPM: c.OutputTPM, Weight: c.Weight, Order: c.Order, ModelMap: c.ModelMap, Models: c.Models,
		Off: c.Off, Account: c.Account, APIVersion: c.APIVersion,
	}
}

// ParseWire is the wire format a stored name (WireName) stands for; false
// for an unknown name.
func ParseWire(s string) (configv1.WireFormat, bool) { return formats.WireFormats.ParseStored(s) }

// parseAuthKind is the auth kind a stored name (authKindName) stands for;
// false for an unknown name.
func parseAuthKind(s string) (configv1.AuthKind, bool) { return formats.AuthKinds.ParseStored(s) }

func modelKindName(k configv1.ModelKind) string {
	if k == configv1.ModelKind_MODEL_KIND_EMBEDDINGS {
		return "embeddings"
	}
	return "chat"
}

// decodeMap decodes a jsonb object of strings; {} gives nil.
func decodeMap(raw []byte) (map[string]string, error) {
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

// encodeMap encodes a map as a jsonb object; nil gives {}.
func encodeMap(m map[string]string) ([]byte, error) {
	if m == nil {
		m = map[string]string{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode map: %w", err)
	}
	return b, nil
}

// millis converts a validated duration to stored milliseconds; nil stays
// NULL (the default).
func millis(d *durationpb.Duration) pgtype.Int8 {
	if d == nil {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: d.AsDuration().Milliseconds(), Valid: true}
}

// text is a nullable column for a name that is "" when unset.
func text(s string) pgtype.Text {
	return pgtype.Text{String: s, Valid: s != ""}
}

// optionalText is a nullable column for an optional field: NULL when
// absent, the value (possibly "") when present.
func optionalText(s *string) pgtype.Text {
	if s == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: *s, Valid: true}
}

func optText(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	return ptr(v.String)
}

func optInt(v pgtype.Int8) *int64 {
	if !v.Valid {
		return nil
	}
	return ptr(v.Int64)
}

func int8Of(v *int64) pgtype.Int8 {
	if v == nil {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: *v, Valid: true}
}

func ptr[T any](v T) *T { return &v }

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
