package compile

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"weir.dev/routing"
)

// The dump is the golden-file form of a compiled table: plain JSON with
// every effective field of every record and member, in table order, keys
// sorted by name, prices as decimal dollars per million tokens (unset parts
// left out), durations in Go syntax. encoding/json sorts map keys, so the
// dump is deterministic.

type dumpTable struct {
	TenantID   string            `json:"tenant_id"`
	TenantName string            `json:"tenant_name"`
	Version    uint64            `json:"version"`
	DataRules  dumpRules         `json:"data_rules"`
	Records    []dumpRecord      `json:"records"`
	ByName     map[string]string `json:"record_by_name"` // what Table.Record resolves each name to
	Keys       []dumpKey         `json:"keys"`
	Budgets    []dumpBudget      `json:"budgets"`
}

type dumpRules struct {
	AllowedRegions []string          `json:"allowed_regions"`
	NoRetainedData bool              `json:"no_retained_data"`
	RequiredTags   map[string]string `json:"required_tags"`
}

type dumpRecord struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	TenantID         string            `json:"tenant_id"`
	Managed          bool              `json:"managed"`
	Internal         bool              `json:"internal"`
	Wire             string            `json:"wire"`
	Pool             bool              `json:"pool"`
	Models           map[string]string `json:"models"`
	AllowedRegions   []string          `json:"allowed_regions"`
	RateLimitHeaders map[string]string `json:"rate_limit_headers"`
	Recovery         dumpRecovery      `json:"recovery"`
	DefaultMaxOutput int64             `json:"default_max_output"`
	Priority         int32             `json:"priority"`
	CreatedAt        string            `json:"created_at"`
	Members          []dumpMember      `json:"members"`
}

type dumpRecovery struct {
	MaxAttempts     int    `json:"max_attempts"`
	CallDeadline    string `json:"call_deadline"`
	AttemptDeadline string `json:"attempt_deadline"`
	CooldownBase    string `json:"cooldown_base"`
	CooldownMax     string `json:"cooldown_max"`
	MaxWait         string `json:"max_wait"`
}

type dumpMember struct {
	ID          string               `json:"id"`
	Name        string               `json:"name"`
	Index       int                  `json:"index"`
	BaseURL     string               `json:"base_url"`
	Auth        dumpAuth             `json:"auth"`
	KeySecret   string               `json:"key_secret"`
	Region      string               `json:"region"`
	RetainsData bool                 `json:"retains_data"`
	Tags        map[string]string    `json:"tags"`
	Limits      dumpLimits           `json:"limits"`
	Prices      map[string]dumpPrice `json:"prices"`
	Weight      uint32               `json:"weight"`
	Order       uint32               `json:"order"`
	ModelMap    map[string]string    `json:"model_map"`
	Models      []string             `json:"models"` // null = every model of the record
	Off         bool                 `json:"off"`
	Account     string               `json:"account"`
	APIVersion  string               `json:"api_version"`
}

type dumpAuth struct {
	Kind            string   `json:"kind"`
	Header          string   `json:"header,omitempty"`
	AWSService      string   `json:"aws_service,omitempty"`
	AWSRegion       string   `json:"aws_region,omitempty"`
	AccessKeySecret string   `json:"access_key_secret,omitempty"`
	TokenURL        string   `json:"token_url,omitempty"`
	ClientID        string   `json:"client_id,omitempty"`
	ClientSecret    string   `json:"client_secret_secret,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
}

type dumpLimits struct {
	RPM       int64 `json:"rpm"`
	InputTPM  int64 `json:"input_tpm"`
	OutputTPM int64 `json:"output_tpm"`
}

type dumpPrice struct {
	Input      *string `json:"input,omitempty"`
	Output     *string `json:"output,omitempty"`
	CacheRead  *string `json:"cache_read,omitempty"`
	CacheWrite *string `json:"cache_write,omitempty"`
}

type dumpKey struct {
	Name           string   `json:"name"`
	ID             string   `json:"id"`
	SHA256         string   `json:"sha256"`
	AllowedModels  []string `json:"allowed_models"`
	AllowedRecords []string `json:"allowed_records"`
	Regions        []string `json:"regions"`
	Revoked        bool     `json:"revoked"`
	// Found is whether Table.Key finds the key by its hash (revoked keys
	// are not found).
	Found bool `json:"found"`
}

type dumpBudget struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	KeyID string `json:"key_id"`
	Limit string `json:"limit_usd"`
}

// dump renders a compiled table and the key entries it was built from.
func dump(t *routing.Table, keys []routing.KeyEntry) string {
	d := dumpTable{
		TenantID:   t.TenantID,
		TenantName: t.TenantName,
		Version:    t.Version,
		DataRules: dumpRules{
			AllowedRegions: t.Rules.AllowedRegions,
			NoRetainedData: t.Rules.NoRetainedData,
			RequiredTags:   t.Rules.RequiredTags,
		},
		Records: []dumpRecord{},
		ByName:  map[string]string{},
		Keys:    []dumpKey{},
		Budgets: []dumpBudget{},
	}
	for _, r := range t.Records {
		d.Records = append(d.Records, dumpRec(r))
		d.ByName[r.Name] = t.Record(r.Name).ID
	}
	for _, k := range keys {
		d.Keys = append(d.Keys, dumpKey{
			Name:           k.Key.Name,
			ID:             k.Key.ID,
			SHA256:         hex.EncodeToString(k.SHA256[:]),
			AllowedModels:  setList(k.Key.AllowedModels),
			AllowedRecords: setList(k.Key.AllowedRecords),
			Regions:        k.Key.Regions,
			Revoked:        k.Key.Revoked,
			Found:          t.Key(k.SHA256) != nil && t.Key(k.SHA256).ID == k.Key.ID,
		})
	}
	sort.Slice(d.Keys, func(i, j int) bool { return d.Keys[i].Name < d.Keys[j].Name })
	for _, b := range t.Budgets {
		d.Budgets = append(d.Budgets, dumpBudget{ID: b.ID, Name: b.Name, KeyID: b.KeyID, Limit: b.Limit.String()})
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // only plain data above
	}
	return string(out) + "\n"
}

func dumpRec(r *routing.Record) dumpRecord {
	dr := dumpRecord{
		ID:               r.ID,
		Name:             r.Name,
		TenantID:         r.TenantID,
		Managed:          r.Managed,
		Internal:         r.Internal,
		Wire:             r.Wire.String(),
		Pool:             r.Pool,
		Models:           map[string]string{},
		AllowedRegions:   r.AllowedRegions,
		RateLimitHeaders: r.RateLimitHeaders,
		Recovery: dumpRecovery{
			MaxAttempts:     r.Recovery.MaxAttempts,
			CallDeadline:    r.Recovery.CallDeadline.String(),
			AttemptDeadline: r.Recovery.AttemptDeadline.String(),
			CooldownBase:    r.Recovery.CooldownBase.String(),
			CooldownMax:     r.Recovery.CooldownMax.String(),
			MaxWait:         r.Recovery.MaxWait.String(),
		},
		DefaultMaxOutput: r.DefaultMaxOutput,
		Priority:         r.Priority,
		CreatedAt:        r.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
	for name, k := range r.Models {
		dr.Models[name] = kindName(k)
	}
	for _, m := range r.Members {
		dm := dumpMember{
			ID:    m.ID,
			Name:  m.Name,
			Index: m.Index,
			Auth: dumpAuth{
				Kind:            authName(m.Auth.Kind),
				Header:          m.Auth.Header,
				AWSService:      m.Auth.AWSService,
				AWSRegion:       m.Auth.AWSRegion,
				AccessKeySecret: m.Auth.AccessKeySecret,
				TokenURL:        m.Auth.TokenURL,
				ClientID:        m.Auth.ClientID,
				ClientSecret:    m.Auth.ClientSecret,
				Scopes:          m.Auth.Scopes,
			},
			BaseURL:     m.BaseURL,
			KeySecret:   m.KeySecret,
			Region:      m.Region,
			RetainsData: m.RetainsData,
			Tags:        m.Tags,
			Limits:      dumpLimits{RPM: m.Limits.RPM, InputTPM: m.Limits.InputTPM, OutputTPM: m.Limits.OutputTPM},
			Prices:      map[string]dumpPrice{},
			Weight:      m.Weight,
			Order:       m.Order,
			ModelMap:    m.ModelMap,
			Models:      setList(m.Models),
			Off:         m.Off,
			Account:     m.Account,
			APIVersion:  m.APIVersion,
		}
		for model, p := range m.Prices {
			dm.Prices[model] = dumpPrice{
				Input:      dollars(p.Input, p.HasInput),
				Output:     dollars(p.Output, p.HasOutput),
				CacheRead:  dollars(p.CacheRead, p.HasCacheRead),
				CacheWrite: dollars(p.CacheWrite, p.HasCacheWrite),
			}
		}
		dr.Members = append(dr.Members, dm)
	}
	return dr
}

// dollars formats micro-dollars as exact decimal dollars ("2.75", "0.275",
// "11"), or nil when the part is unset.
func dollars(v routing.Micros, has bool) *string {
	if !has {
		return nil
	}
	s := fmt.Sprintf("%d.%06d", v/1e6, v%1e6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return &s
}

func setList(m map[string]bool) []string {
	if m == nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func kindName(k routing.ModelKind) string {
	switch k {
	case routing.KindChat:
		return "chat"
	case routing.KindEmbeddings:
		return "embeddings"
	}
	return fmt.Sprintf("kind(%d)", k)
}

func authName(k routing.AuthKind) string {
	switch k {
	case routing.AuthNone:
		return "none"
	case routing.AuthAPIKey:
		return "api_key"
	case routing.AuthSigV4:
		return "sigv4"
	case routing.AuthOAuth2:
		return "oauth2"
	}
	return fmt.Sprintf("auth(%d)", k)
}
