package provider

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

// AzureAPIVersion is the api-version the azure-openai preset pins when the
// request gives none.
const AzureAPIVersion = "2024-10-21"

// Default endpoints of the vendors that have one. A preset fills them in
// only where an endpoint is needed (a plain record, a new member) and the
// request gives none; a given base_url always wins.
const (
	OpenAIBaseURL    = "https://api.openai.com/v1"
	AnthropicBaseURL = "https://api.anthropic.com"
	GeminiBaseURL    = "https://generativelanguage.googleapis.com/v1beta"
)

// VertexBaseURL is the Vertex AI endpoint of Google's models for a project
// in a region ("europe-west4"): the base the vertex preset needs, which it
// cannot fill in itself (the project is the operator's). The edge appends
// "/models/{m}:generateContent" and the like.
func VertexBaseURL(region, project string) string {
	return "https://" + region + "-aiplatform.googleapis.com/v1/projects/" + project + "/locations/" + region + "/publishers/google"
}

// presetDef is what one preset determines.
type presetDef struct {
	name    string
	wire    configv1.WireFormat
	kind    configv1.AuthKind // AUTH_KIND_UNSPECIFIED: decided by the key secret (vllm)
	header  string
	service string // SigV4 service
	baseURL string // default endpoint, "" when the user must give one
	version string // default api_version
}

var presets = map[adminv1.Preset]presetDef{
	adminv1.Preset_PRESET_OPENAI: {
		name: "openai", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		kind: configv1.AuthKind_AUTH_KIND_API_KEY, header: "authorization", baseURL: OpenAIBaseURL,
	},
	adminv1.Preset_PRESET_AZURE_OPENAI: {
		name: "azure-openai", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		kind: configv1.AuthKind_AUTH_KIND_API_KEY, header: "api-key", version: AzureAPIVersion,
	},
	adminv1.Preset_PRESET_ANTHROPIC: {
		name: "anthropic", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC,
		kind: configv1.AuthKind_AUTH_KIND_API_KEY, header: "x-api-key", baseURL: AnthropicBaseURL,
	},
	adminv1.Preset_PRESET_BEDROCK: {
		name: "bedrock", wire: configv1.WireFormat_WIRE_FORMAT_BEDROCK,
		kind: configv1.AuthKind_AUTH_KIND_SIGV4, service: "bedrock",
	},
	adminv1.Preset_PRESET_VLLM: {
		name: "vllm", wire: configv1.WireFormat_WIRE_FORMAT_OPENAI,
	},
	adminv1.Preset_PRESET_GEMINI: {
		name: "gemini", wire: configv1.WireFormat_WIRE_FORMAT_GEMINI,
		kind: configv1.AuthKind_AUTH_KIND_API_KEY, header: "x-goog-api-key", baseURL: GeminiBaseURL,
	},
	adminv1.Preset_PRESET_VERTEX: {
		name: "vertex", wire: configv1.WireFormat_WIRE_FORMAT_GEMINI,
		kind: configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT,
	},
}

// PresetName returns the name a preset is stored under ("openai",
// "azure-openai", "anthropic", "bedrock", "vllm", "gemini", "vertex"), or "" for
// PRESET_UNSPECIFIED and unknown values.
func PresetName(p adminv1.Preset) string {
	return presets[p].name
}

// ParsePreset is the inverse of PresetName; it returns PRESET_UNSPECIFIED
// for a name it does not know (records store the preset for information
// only, so an unknown name is not an error).
func ParsePreset(name string) adminv1.Preset {
	for p, d := range presets {
		if d.name == name {
			return p
		}
	}
	return adminv1.Preset_PRESET_UNSPECIFIED
}

// Given reports whether the request itself sets the field at path, a field
// path of ProviderSpec or PoolMemberSpec in proto names ("region",
// "auth.kind"). What the request gives wins over what a preset determines.
type Given func(path string) bool

// GivenBySpec reports the fields set in msg: a scalar that is not zero, an
// optional field that is present, a message that is present, a list or map
// that is not empty. It is how a create request says what it gives.
func GivenBySpec(msg proto.Message) Given {
	return func(path string) bool {
		m := msg.ProtoReflect()
		parts := strings.Split(path, ".")
		for i, name := range parts {
			fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
			if fd == nil || !m.Has(fd) {
				return false
			}
			if i < len(parts)-1 {
				if fd.Message() == nil {
					return false
				}
				m = m.Get(fd).Message()
			}
		}
		return true
	}
}

// GivenByMask reports the fields an update mask names: the path itself, a
// parent of it ("auth" names "auth.kind"), or "*".
func GivenByMask(paths []string) Given {
	return func(path string) bool {
		for _, p := range paths {
			if p == "*" || p == path || strings.HasPrefix(path, p+".") {
				return true
			}
		}
		return false
	}
}

// ResolveRecordPreset returns a copy of spec with the fields preset p
// determines filled in, except those the request gives (given), and the
// preset's problems (field names it with presetField). spec is not changed.
// PRESET_UNSPECIFIED returns a plain copy.
//
// What each preset determines:
//   - openai: wire openai; API-key auth in "authorization" (sent as
//     "Bearer <key>"); base_url https://api.openai.com/v1 for a plain record
//     that gives none.
//   - azure-openai: wire openai; API-key auth in "api-key"; api_version
//     AzureAPIVersion. The base_url (…/openai) must be given.
//   - anthropic: wire anthropic; API-key auth in "x-api-key"; base_url
//     https://api.anthropic.com for a plain record that gives none.
//   - bedrock: wire bedrock; SigV4 auth with service "bedrock" and signing
//     region auth.aws_region, else the record's region. When the request
//     names a key_secret but no auth.access_key_secret, the key secret is
//     taken as the access key secret (a SigV4 record signs with no API key,
//     and `weir provider create` has only --key-secret).
//   - vllm: wire openai; no auth, or API-key auth in "authorization" when a
//     key_secret is given.
//   - gemini: wire gemini (the Gemini API); API-key auth in
//     "x-goog-api-key"; base_url GeminiBaseURL for a plain record that gives
//     none. The key secret must be bound to generativelanguage.googleapis.com.
//   - vertex: wire gemini (Vertex AI); google-service-account auth, the key
//     secret holding the service account's JSON key (bound to
//     oauth2.googleapis.com, where its JWT is exchanged, and to the
//     endpoint's host). The base_url (VertexBaseURL: region and project)
//     must be given.
//
// The preset's auth applies only when the request names no auth kind or the
// preset's own kind; a request that names another kind keeps its auth
// whole. A preset never sets base_url on a pool.
func ResolveRecordPreset(p adminv1.Preset, spec *adminv1.ProviderSpec, pool bool, given Given, presetField string) (*adminv1.ProviderSpec, error) {
	out := cloneSpec(spec)
	if p == adminv1.Preset_PRESET_UNSPECIFIED {
		return out, nil
	}
	var ps problems
	def, ok := presets[p]
	if !ok {
		ps.add(presetField, CodeInvalidValue, "unknown preset %d", int32(p))
		return out, ps.err()
	}
	if !given("wire_format") {
		out.WireFormat = def.wire
	} else if out.GetWireFormat() != def.wire {
		ps.add(presetField, CodeWireMismatch, "preset %s is for wire format %s, but the record's is %s", def.name, WireName(def.wire), WireName(out.GetWireFormat()))
	}
	if !pool && !given("base_url") && def.baseURL != "" {
		out.BaseUrl = def.baseURL
	}
	if def.version != "" && !given("api_version") {
		out.ApiVersion = def.version
	}
	kind := def.kind
	if p == adminv1.Preset_PRESET_VLLM {
		kind = configv1.AuthKind_AUTH_KIND_NONE
		if out.GetKeySecret() != "" {
			kind = configv1.AuthKind_AUTH_KIND_API_KEY
		}
	}
	if p == adminv1.Preset_PRESET_BEDROCK && out.GetKeySecret() != "" && out.GetAuth().GetAccessKeySecret() == "" &&
		(!given("auth.kind") || out.GetAuth().GetKind() == configv1.AuthKind_AUTH_KIND_SIGV4) {
		if out.Auth == nil {
			out.Auth = &configv1.Auth{}
		}
		out.Auth.AccessKeySecret = out.KeySecret
		out.KeySecret = ""
	}
	out.Auth = presetAuth(def, kind, out.GetAuth(), given, out.GetRegion())
	return out, ps.err()
}

// ResolveMemberPreset returns a copy of a member's spec with the fields
// preset p determines filled in, except those the request gives, and the
// preset's problems. rec is the member's record (after its own preset): a
// member that gives no key secret or region may take the record's. spec is
// not changed.
//
// A member's preset sets the member's own wire format (R-FMT-4: a pool may
// mix formats) when it differs from the record's and the request gives
// none; a wire_format the request gives must be the preset's. A preset of
// another format than the record's gives the member its own auth (it cannot
// sign with the record's).
//
// Per preset, as ResolveRecordPreset, with these differences: the default
// base_url applies when the member gives none; azure-openai pins
// api_version only when neither the member nor the record has one (a member
// otherwise inherits the record's); bedrock signs in the member's
// auth.aws_region, else its region, else the record's region; vllm uses
// API-key auth when a key secret applies to the member (its own or the
// record's).
func ResolveMemberPreset(p adminv1.Preset, rec *adminv1.ProviderSpec, spec *adminv1.PoolMemberSpec, given Given, presetField string) (*adminv1.PoolMemberSpec, error) {
	out := cloneMemberSpec(spec)
	if p == adminv1.Preset_PRESET_UNSPECIFIED {
		return out, nil
	}
	var ps problems
	def, ok := presets[p]
	if !ok {
		ps.add(presetField, CodeInvalidValue, "unknown preset %d", int32(p))
		return out, ps.err()
	}
	switch w := out.GetWireFormat(); {
	case given("wire_format") && w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED && w != def.wire:
		ps.add(presetField, CodeWireMismatch, "preset %s is for wire format %s, but the member's is %s", def.name, WireName(def.wire), WireName(w))
	case rec.GetWireFormat() != def.wire:
		out.WireFormat = def.wire // the member's own format (R-FMT-4)
	default:
		out.WireFormat = configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED // the record's
	}
	if !given("base_url") && def.baseURL != "" {
		out.BaseUrl = def.baseURL
	}
	if def.version != "" && !given("api_version") && rec.GetApiVersion() == "" {
		out.ApiVersion = proto.String(def.version)
	}
	kind := def.kind
	if p == adminv1.Preset_PRESET_VLLM {
		kind = configv1.AuthKind_AUTH_KIND_NONE
		if inheritStr(out.KeySecret, rec.GetKeySecret()) != "" {
			kind = configv1.AuthKind_AUTH_KIND_API_KEY
		}
	}
	if p == adminv1.Preset_PRESET_BEDROCK && out.GetKeySecret() != "" && out.GetAuth().GetAccessKeySecret() == "" &&
		(!given("auth.kind") || out.GetAuth().GetKind() == configv1.AuthKind_AUTH_KIND_SIGV4) {
		if out.Auth == nil {
			out.Auth = &configv1.Auth{}
		}
		out.Auth.AccessKeySecret = out.GetKeySecret()
		out.KeySecret = nil
	}
	region := inheritStr(out.Region, rec.GetRegion())
	out.Auth = presetAuth(def, kind, out.GetAuth(), given, region)
	return out, ps.err()
}

// presetAuth merges the auth a preset determines under the auth a request
// gives. When the request names a different kind, its auth is kept whole.
func presetAuth(def presetDef, kind configv1.AuthKind, have *configv1.Auth, given Given, region string) *configv1.Auth {
	if given("auth.kind") && have.GetKind() != kind {
		return cloneAuth(have)
	}
	out := cloneAuth(have)
	if out == nil {
		out = &configv1.Auth{}
	}
	out.Kind = kind
	switch kind {
	case configv1.AuthKind_AUTH_KIND_API_KEY:
		if !given("auth.header") {
			out.Header = def.header
			if out.Header == "" {
				out.Header = "authorization"
			}
		}
	case configv1.AuthKind_AUTH_KIND_SIGV4:
		if !given("auth.aws_service") {
			out.AwsService = def.service
		}
		if !given("auth.aws_region") && out.GetAwsRegion() == "" {
			out.AwsRegion = region
		}
	}
	return out
}

// inheritStr returns *own when the optional field is present, else the
// record's value.
func inheritStr(own *string, record string) string {
	if own != nil {
		return *own
	}
	return record
}

// normalizeRecord fills in what the server resolves on its own, so the
// stored record is explicit (provider_types.proto):
//   - a model of unspecified kind is embeddings when its name contains
//     "embed", chat otherwise;
//   - an auth of unspecified kind that names a header, or a record with a
//     key secret, is API-key auth;
//   - API-key auth that names no header uses the wire format's usual one.
//
// It changes spec in place.
func normalizeRecord(spec *adminv1.ProviderSpec) {
	for _, m := range spec.GetModels() {
		if m != nil && m.Kind == configv1.ModelKind_MODEL_KIND_UNSPECIFIED {
			m.Kind = configv1.ModelKind_MODEL_KIND_CHAT
			if strings.Contains(strings.ToLower(m.GetName()), "embed") {
				m.Kind = configv1.ModelKind_MODEL_KIND_EMBEDDINGS
			}
		}
	}
	a := spec.GetAuth()
	if a.GetKind() == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && (a.GetHeader() != "" || spec.GetKeySecret() != "") {
		if spec.Auth == nil {
			spec.Auth = &configv1.Auth{}
		}
		spec.Auth.Kind = configv1.AuthKind_AUTH_KIND_API_KEY
	}
	if spec.GetAuth().GetKind() == configv1.AuthKind_AUTH_KIND_API_KEY && spec.GetAuth().GetHeader() == "" {
		spec.Auth.Header = defaultKeyHeader(spec.GetWireFormat())
	}
	if spec.Tags != nil && len(spec.Tags) == 0 {
		spec.Tags = nil
	}
}

// canonical puts a validated record in the order it is stored and listed
// in: models and prices by model name. It runs after validation, whose
// problems name list positions of the request.
func canonical(r *Record) {
	sortPrices(r.Spec.Prices)
	slices.SortStableFunc(r.Spec.Models, func(a, b *configv1.Model) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, m := range r.Members {
		sortPrices(m.Spec.Prices)
	}
}

// sortPrices orders prices by model.
func sortPrices(ps []*configv1.Price) {
	slices.SortStableFunc(ps, func(a, b *configv1.Price) int { return strings.Compare(a.GetModel(), b.GetModel()) })
}

// normalizeMember fills in a member's explicit defaults (rec is its
// record's spec), changing spec in place:
//   - weight and order are 1 when 0;
//   - an auth that names a header but no kind is API-key auth;
//   - an auth that names neither a kind nor a header but sets other fields
//     (say --aws-region and --access-key-secret on a member of a SigV4 pool)
//     is the record's auth with those fields replaced, resolved here into a
//     whole auth of the member's own: the edge takes a member's auth whole
//     or not at all, and a later change of the record's auth does not reach
//     it;
//   - API-key auth that names no header uses the usual one of the member's
//     wire format (its own, else the record's).
func normalizeMember(rec *adminv1.ProviderSpec, spec *adminv1.PoolMemberSpec) {
	if spec.Weight == 0 {
		spec.Weight = routing.DefaultWeight
	}
	if spec.Order == 0 {
		spec.Order = routing.DefaultOrder
	}
	a := spec.GetAuth()
	switch {
	case a.GetKind() == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && a.GetHeader() != "":
		spec.Auth.Kind = configv1.AuthKind_AUTH_KIND_API_KEY
	case a.GetKind() == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && authHasFields(a):
		merged := cloneAuth(rec.GetAuth())
		if merged == nil {
			merged = &configv1.Auth{}
		}
		overlayAuth(merged, a)
		spec.Auth = merged
	}
	if spec.GetAuth().GetKind() == configv1.AuthKind_AUTH_KIND_API_KEY && spec.GetAuth().GetHeader() == "" {
		wire := rec.GetWireFormat()
		if w := spec.GetWireFormat(); w != configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
			wire = w // the member's own format (R-FMT-4)
		}
		spec.Auth.Header = defaultKeyHeader(wire)
	}
}

// authHasFields reports whether an auth sets anything besides kind and
// header (compile.AuthHasFields).
func authHasFields(a *configv1.Auth) bool { return compile.AuthHasFields(a) }

// overlayAuth sets every field src gives (not empty) on dst.
func overlayAuth(dst, src *configv1.Auth) {
	set := func(d *string, v string) {
		if v != "" {
			*d = v
		}
	}
	set(&dst.Header, src.GetHeader())
	set(&dst.AwsService, src.GetAwsService())
	set(&dst.AwsRegion, src.GetAwsRegion())
	set(&dst.AccessKeySecret, src.GetAccessKeySecret())
	set(&dst.TokenUrl, src.GetTokenUrl())
	set(&dst.ClientId, src.GetClientId())
	set(&dst.ClientSecretSecret, src.GetClientSecretSecret())
	if len(src.GetScopes()) > 0 {
		dst.Scopes = append([]string(nil), src.GetScopes()...)
	}
}
