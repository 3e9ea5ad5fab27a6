package routing

import (
	"time"
)

// WireFormat is the upstream API a record speaks.
type WireFormat uint8

const (
	WireUnknown WireFormat = iota
	WireOpenAI
	WireAnthropic
	WireBedrock
	WireGemini
)

func (w WireFormat) String() string {
	switch w {
	case WireOpenAI:
		return "openai"
	case WireAnthropic:
		return "anthropic"
	case WireBedrock:
		return "bedrock"
	case WireGemini:
		return "gemini"
	}
	return "unknown"
}

// ModelKind says which endpoints a model can be called through.
type ModelKind uint8

const (
	KindChat ModelKind = iota + 1
	KindEmbeddings
)

// Endpoint is the caller-facing API a call came in on.
type Endpoint uint8

const (
	EndpointChatCompletions Endpoint = iota + 1
	EndpointEmbeddings
	EndpointResponses
	EndpointMessages
)

// String is the path of the endpoint.
func (e Endpoint) String() string {
	switch e {
	case EndpointChatCompletions:
		return "/v1/chat/completions"
	case EndpointEmbeddings:
		return "/v1/embeddings"
	case EndpointResponses:
		return "/v1/responses"
	case EndpointMessages:
		return "/v1/messages"
	}
	return "unknown"
}

// AnthropicFormat reports whether the caller speaks the Anthropic Messages
// format (errors are then written in Anthropic's shape).
func (e Endpoint) AnthropicFormat() bool { return e == EndpointMessages }

// Native reports whether a call on endpoint e goes to a member of wire
// format w as the caller sent it (R-FMT-1): OpenAI paths to openai members,
// /v1/messages to anthropic and bedrock members. Every other pair is
// translated (R-FMT-2).
func (e Endpoint) Native(w WireFormat) bool {
	switch e {
	case EndpointChatCompletions, EndpointResponses, EndpointEmbeddings:
		return w == WireOpenAI
	case EndpointMessages:
		return w == WireAnthropic || w == WireBedrock
	}
	return false
}

// AuthKind is how the edge signs for an endpoint.
type AuthKind uint8

const (
	AuthNone AuthKind = iota
	AuthAPIKey
	AuthSigV4
	AuthOAuth2
	// AuthGoogleServiceAccount signs with access tokens from a Google
	// service account's JSON key (the member's key secret), got by the
	// signed-JWT grant at the key's token_uri (Vertex AI).
	AuthGoogleServiceAccount
)

// Auth is how to sign for one member, taken as a whole from the record when
// the member names no auth kind and no header.
type Auth struct {
	Kind            AuthKind
	Header          string
	AWSService      string
	AWSRegion       string
	AccessKeySecret string
	TokenURL        string
	ClientID        string
	ClientSecret    string // name of the secret holding the client secret
	Scopes          []string
}

// Limits are a member's declared limits; 0 means not declared. Every one
// is cluster-wide: an edge counts against its share (R-HEAD-7).
type Limits struct {
	// RPM, InputTPM and OutputTPM are per rolling minute (R-HEAD-2).
	RPM, InputTPM, OutputTPM int64
	// RPD is requests per calendar day in the record's DayZone (R-HEAD-6).
	RPD int64
	// MaxInFlight is the calls the member may hold at once (R-CAP-1).
	MaxInFlight int64
}

// Recovery holds a record's failover settings, defaults already applied.
type Recovery struct {
	MaxAttempts     int
	CallDeadline    time.Duration
	AttemptDeadline time.Duration // 0 disables the attempt deadline
	CooldownBase    time.Duration
	CooldownMax     time.Duration
	MaxWait         time.Duration
}

// Defaults of ROUTING.md (bold values).
const (
	DefaultMaxAttempts       = 8
	DefaultCallDeadline      = 600 * time.Second
	DefaultAttemptDeadline   = 120 * time.Second
	DefaultCooldownBase      = 10 * time.Second
	DefaultCooldownMax       = time.Hour
	DefaultMaxRecords        = 3
	DefaultMaxOutput         = 4096
	DefaultWeight            = 1 // a member's weight when it gives none (or 0)
	DefaultOrder             = 1 // a member's order when it gives none (or 0)
	ServerErrorCooldown      = 5 * time.Second
	TransportCooldown        = 5 * time.Second
	SpentCooldown            = 5 * time.Minute
	KeyRefusedCooldown       = 5 * time.Minute
	KeyUnavailablePassOver   = time.Minute
	DisableAfter401s         = 3
	StickyHeadroomFloor      = 0.05
	KeepAliveInterval        = 15 * time.Second
	DefaultRateLimitCooldown = DefaultCooldownBase
)

// DefaultRecovery returns the ROUTING.md defaults.
func DefaultRecovery() Recovery {
	return Recovery{
		MaxAttempts:     DefaultMaxAttempts,
		CallDeadline:    DefaultCallDeadline,
		AttemptDeadline: DefaultAttemptDeadline,
		CooldownBase:    DefaultCooldownBase,
		CooldownMax:     DefaultCooldownMax,
	}
}

// Price is dollars per million tokens in micro-dollars (R-COST-4). Has*
// report which parts are set: a member price replaces only the parts it gives.
type Price struct {
	Input, Output, CacheRead, CacheWrite             Micros
	HasInput, HasOutput, HasCacheRead, HasCacheWrite bool
}

// Member is one deployment with every inherited field already resolved. A
// plain record has exactly one member, named "primary".
type Member struct {
	// ID is unique in the table: "<record id>/<member name>".
	ID     string
	Name   string
	Record *Record
	// Index is the member's position in its record (stable, config order).
	Index       int
	BaseURL     string
	Auth        Auth
	KeySecret   string
	Region      string // "" = no region
	RetainsData bool
	Tags        map[string]string
	Limits      Limits
	// Prices are merged per caller model name; a model missing here is
	// unpriced on this member.
	Prices   map[string]Price
	Weight   uint32
	Order    uint32
	ModelMap map[string]string
	// Models is the subset served; nil means every model of the record.
	Models map[string]bool
	Off    bool
	// Account groups members that share capacity (R-ORDER-4): the declared
	// account, else "secret:<key secret>", else the member's own ID.
	Account    string
	APIVersion string
	// Wire is the member's wire format: its own, else its record's
	// (R-FMT-4). Read it with Format, which also covers a member built
	// without one.
	Wire WireFormat
}

// Format is the member's wire format: Wire, else its record's.
func (m *Member) Format() WireFormat {
	if m.Wire == WireUnknown && m.Record != nil {
		return m.Record.Wire
	}
	return m.Wire
}

// Serves reports whether the member serves the caller's model (R-ELIG-1).
func (m *Member) Serves(model string) bool {
	if _, ok := m.Record.Models[model]; !ok {
		return false
	}
	return m.Models == nil || m.Models[model]
}

// UpstreamModel is the name the member sends upstream for a caller's model.
func (m *Member) UpstreamModel(model string) string {
	if s, ok := m.ModelMap[model]; ok && s != "" {
		return s
	}
	return model
}

// Record is a compiled provider record.
type Record struct {
	ID       string
	Name     string
	TenantID string // "" for managed records
	Managed  bool
	Internal bool
	Wire     WireFormat
	Models   map[string]ModelKind
	Pool     bool
	Members  []*Member
	// AllowedRegions narrows the pool's members (R-ELIG-3).
	AllowedRegions   []string
	RateLimitHeaders map[string]string
	Recovery         Recovery
	DefaultMaxOutput int64
	Priority         int32
	CreatedAt        time.Time
	// DayZone is the zone whose calendar days count RPD (R-HEAD-6); never
	// nil (UTC when the record names none).
	DayZone *time.Location
}

// Key is a caller's API key with its restrictions.
type Key struct {
	ID             string
	Name           string
	AllowedModels  map[string]bool
	AllowedRecords map[string]bool
	Regions        []string
	Revoked        bool
	// Limits are the key's own caller limits (R-CAP-2), enforced on top of
	// its tenant's; zero fields mean none.
	Limits CallerLimits
}

// CallerLimits are the caller limits of a tenant or an API key (R-CAP-2).
// They are cluster-wide: each edge enforces its share of them (R-HEAD-7,
// see the callerlimit package). A zero field means no limit.
type CallerLimits struct {
	// RPM is how many calls may start per minute.
	RPM int64
	// MaxInFlight is how many calls may be in flight at once.
	MaxInFlight int64
}

// Ranges and the default of caller limits (R-CAP-2). A tenant whose own
// max_in_flight is 0 gets the cluster's default, or DefaultTenantMaxInFlight
// when the cluster sets none.
const (
	MaxCallerRPM             = 100_000_000
	MaxCallerInFlight        = 1_000_000
	DefaultTenantMaxInFlight = 512
)

// DataRules are the tenant's hard limits (R-ELIG-2).
type DataRules struct {
	AllowedRegions []string
	NoRetainedData bool
	RequiredTags   map[string]string
}

// Rand is the randomness the core is given: a float in [0,1).
type Rand interface {
	Float64() float64
}
