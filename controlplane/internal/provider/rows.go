package provider

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/durationpb"

	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
)

// This file maps a validated record to the columns of its database rows
// (migrations 000002). The rows are read back by package recordrow, the one
// decoder the snapshot builder uses too; assemble (db.go) turns what it
// returns into a Record.

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
	RPD                int64
	MaxInFlight        int64
	DayZone            string
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
		RPD:                s.GetLimits().GetRpd(),
		MaxInFlight:        s.GetLimits().GetMaxInFlight(),
		DayZone:            s.GetDayZone(),
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
		RPD: c.RPD, MaxInFlight: c.MaxInFlight, DayZone: c.DayZone,
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
		RPD: c.RPD, MaxInFlight: c.MaxInFlight, DayZone: c.DayZone,
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
	WireFormat         pgtype.Text
	RPD                pgtype.Int8
	MaxInFlight        pgtype.Int8
}

// memberColumnsOf returns the columns of a validated member. A member that
// names neither an auth kind nor a header stores both NULL (it inherits the
// record's auth); one that declares no limit stores them all NULL; one
// without a wire format of its own stores it NULL (the record's).
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
		c.RPD = pgtype.Int8{Int64: l.GetRpd(), Valid: true}
		c.MaxInFlight = pgtype.Int8{Int64: l.GetMaxInFlight(), Valid: true}
	}
	if w := s.GetWireFormat(); w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		c.WireFormat = pgtype.Text{String: WireName(w), Valid: true}
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
		WireFormat: c.WireFormat, RPD: c.RPD, MaxInFlight: c.MaxInFlight,
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
		WireFormat: c.WireFormat, RPD: c.RPD, MaxInFlight: c.MaxInFlight,
	}
}

// ParseWire is the wire format a stored name (WireName) stands for; false
// for an unknown name.
func ParseWire(s string) (configv1.WireFormat, bool) { return formats.WireFormats.ParseStored(s) }

func modelKindName(k configv1.ModelKind) string {
	if k == configv1.ModelKind_MODEL_KIND_EMBEDDINGS {
		return "embeddings"
	}
	return "chat"
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

func int8Of(v *int64) pgtype.Int8 {
	if v == nil {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: *v, Valid: true}
}

func ptr[T any](v T) *T { return &v }

func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
