package cli

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/rules"
)

// specKind says which command a specFlags serves, and so which flags it
// registers.
type specKind int

const (
	// recordCreate is `provider create`; recordSet is `provider set`.
	recordCreate specKind = iota
	recordSet
	// memberAdd is `provider pool add`: member flags, plus the record-only
	// flags used when the record is created.
	memberAdd
	// memberSet is `provider pool set`: member flags and --off/--on.
	memberSet
)

// specFlags holds the flags of DESIGN §3 that describe a provider record or
// a pool member. Which flags are registered depends on the command; the
// same flag name always means the same field.
type specFlags struct {
	kind specKind

	preset   string
	baseURL  string
	models   listFlag
	keySec   string
	region   string
	retains  bool
	tags     kvFlag
	prices   priceFlag
	rpm      intFlag[int64]
	inTPM    intFlag[int64]
	outTPM   intFlag[int64]
	rpd      intFlag[int64]
	inFlight intFlag[int64]
	internal bool

	// Record-only flags (ProviderSpec fields a member does not have).
	allowRegions listFlag
	maxAttempts  intFlag[uint32]
	maxWait      durFlag
	attemptDL    durFlag
	rlHeaders    kvFlag
	defMaxOut    intFlag[int64]
	priority     intFlag[int32]
	dayZone      string

	// Auth flags.
	authKind     string
	authHeader   string
	awsService   string
	awsRegion    string
	accessKeySec string
	tokenURL     string
	clientID     string
	clientSecSec string

	// Member-only flags.
	weight       intFlag[uint32]
	order        intFlag[uint32]
	modelMap     kvFlag
	account      string
	recordMember string
	off, on      bool

	given map[string]bool
}

// recordOnlyFlags are the flags that set a field only a record has. On `pool
// add` they apply when the add creates the record.
func recordOnlyFlags() []string {
	return []string{"allow-region", "max-attempts", "max-wait", "attempt-deadline", "rate-limit-header",
		"default-max-output", "priority", "internal", "day-zone"}
}

// register adds the flags of s.kind to fs.
func (s *specFlags) register(fs *flagSet) {
	s.setChecks()
	member := s.kind == memberAdd || s.kind == memberSet
	fs.StringVar(&s.preset, "preset", "", "`"+strings.Join(words.All[adminv1.Preset](), "|")+"`: the preset, which sets the wire format and auth defaults")
	fs.StringVar(&s.baseURL, "base-url", "", "endpoint `URL` (https; http only to loopback or on internal records)")
	if member {
		fs.Var(&s.models, "models", "models `M,M…` (a member: the subset of the record's models it serves; pool add creating the record: the record's models)")
	} else {
		fs.Var(&s.models, "models", "model names callers use, `M,M…` (repeatable)")
	}
	fs.StringVar(&s.keySec, "key-secret", "", "name of the secret `S` holding the API key")
	fs.StringVar(&s.region, "region", "", "region name `R`, e.g. eu-north")
	fs.BoolVar(&s.retains, "retains-data", false, "the provider retains request data (=false to say it does not)")
	fs.Var(&s.tags, "tag", "tag `K=V` matched by data rules (repeatable)")
	if member {
		fs.Var(&s.prices, "price", "`M=IN,OUT[,CR[,CW]]`: the member's price of model M in dollars per million tokens: input, output, "+
			"cache read, cache write (repeatable). A part left empty (M=,,0.3) is the record's. The price the member ends up with must be whole "+
			"(R-COST-4): input, output, cache read and, on the anthropic and bedrock wire formats, cache write; so when the record has no "+
			"price for M the member's gives them all. Write 0 for a part the provider does not charge")
	} else {
		fs.Var(&s.prices, "price", "`M=IN,OUT[,CR[,CW]]`: the record's price of model M in dollars per million tokens: input, output, "+
			"cache read, cache write (repeatable). A price gives IN and OUT; a plain record's price must be whole (R-COST-4): also CR and, "+
			"on the anthropic and bedrock wire formats, CW. A pool's members may complete it with their own. Write 0 for a part the "+
			"provider does not charge")
	}
	fs.Var(&s.rpm, "rpm", "declared requests per minute (`N`, R-HEAD-2)")
	fs.Var(&s.inTPM, "input-tpm", "declared input tokens per minute (`N`)")
	fs.Var(&s.outTPM, "output-tpm", "declared output tokens per minute (`N`)")
	fs.Var(&s.rpd, "rpd", "declared requests per calendar day (`N`, 0-1000000000; R-HEAD-6), counted in the record's --day-zone")
	fs.Var(&s.inFlight, "max-in-flight", "calls the endpoint may hold at once (`N`, 0-1000000; R-CAP-1); 0: none")
	fs.StringVar(&s.authKind, "auth-kind", "", "`"+strings.Join(words.All[configv1.AuthKind](), "|")+"`: how the edge authenticates to the endpoint (default: the preset's)")
	fs.StringVar(&s.authHeader, "auth-header", "", "header `NAME` of an API key, e.g. api-key, x-api-key, authorization")
	fs.StringVar(&s.awsService, "aws-service", "", "SigV4 service `S`, e.g. bedrock")
	fs.StringVar(&s.awsRegion, "aws-region", "", "SigV4 signing region `R`, e.g. eu-north-1")
	fs.StringVar(&s.accessKeySec, "access-key-secret", "", "name of the secret `S` holding ACCESS_KEY_ID:SECRET_ACCESS_KEY (SigV4)")
	fs.StringVar(&s.tokenURL, "token-url", "", "OAuth2 token `URL`")
	fs.StringVar(&s.clientID, "client-id", "", "OAuth2 client `ID`")
	fs.StringVar(&s.clientSecSec, "client-secret-secret", "", "name of the secret `S` holding the OAuth2 client secret")
	if s.kind != memberSet {
		fs.Var(&s.allowRegions, "allow-region", "allowed member region `R`, or a glob such as eu-* (repeatable, R-ELIG-3)")
		fs.Var(&s.maxAttempts, "max-attempts", "at most `N` attempts per call (R-FAIL-13; 0: the default, 8)")
		fs.Var(&s.maxWait, "max-wait", "how long (`DUR`) a call may wait for a cooling member, e.g. 10s (R-END-1)")
		fs.Var(&s.attemptDL, "attempt-deadline", "deadline (`DUR`) for an attempt's response headers, e.g. 60s (0s disables; default 120s)")
		fs.Var(&s.rlHeaders, "rate-limit-header", "`DIM=NAME`: header NAME carries DIM, one of {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}, e.g. tokens-remaining=x-rl-tokens (repeatable)")
		fs.Var(&s.defMaxOut, "default-max-output", "output cap `N` for budget reservations and translated calls without one (0: the default, 4096)")
		fs.Var(&s.priority, "priority", "priority `N` among records of equal price; higher first")
		fs.BoolVar(&s.internal, "internal", false, "allow plain http to private addresses (cluster admins)")
		fs.StringVar(&s.dayZone, "day-zone", "", "IANA time zone `TZ` whose calendar days count --rpd, e.g. America/Los_Angeles (R-HEAD-6; default UTC)")
	}
	if member {
		fs.Var(&s.weight, "weight", "share `W` of traffic, 1-10000 (0: the default, 1)")
		fs.Var(&s.order, "order", "tier `N`, 1-100: higher tiers are tried when lower ones cannot serve (0: the default, 1)")
		fs.Var(&s.modelMap, "model", "`CALLER=MEMBER`: send model CALLER upstream as MEMBER, e.g. an Azure deployment (repeatable)")
		fs.StringVar(&s.account, "account", "", "capacity account `A` the member shares with others (R-ORDER-4)")
	}
	if s.kind == memberAdd {
		fs.StringVar(&s.recordMember, "record-member", "", "member `NAME` a plain record's own endpoint gets when it becomes a pool (default "+rules.PrimaryMember+")")
	}
	if s.kind == memberSet {
		fs.BoolVar(&s.off, "off", false, "take the member out of every call (R-ELIG-1)")
		fs.BoolVar(&s.on, "on", false, "put the member back")
	}
}

// setChecks sets the flags' local checks. Bounds are those of the field
// types, except where the API documents a range (weight, order); formats
// are routing/rules'; the server validates the rest.
func (s *specFlags) setChecks() {
	s.rpm = intFlag[int64]{max: math.MaxInt64}
	s.inTPM = intFlag[int64]{max: math.MaxInt64}
	s.outTPM = intFlag[int64]{max: math.MaxInt64}
	s.rpd = intFlag[int64]{max: 1_000_000_000}
	s.inFlight = intFlag[int64]{max: 1_000_000}
	s.maxAttempts = intFlag[uint32]{max: math.MaxUint32}
	s.defMaxOut = intFlag[int64]{max: math.MaxInt64}
	s.priority = intFlag[int32]{min: math.MinInt32, max: math.MaxInt32}
	s.weight = intFlag[uint32]{min: 1, max: 10000}
	s.order = intFlag[uint32]{min: 1, max: 100}
	s.models.split = true
	s.models.check = func(m string) error {
		if !rules.ValidModelName(m) {
			return fmt.Errorf("model name %q: want 1-%d bytes without spaces", m, rules.MaxModelLen)
		}
		return nil
	}
	s.tags.want, s.tags.check = "K=V", checkTag
	s.rlHeaders.want, s.rlHeaders.check = "DIM=NAME", checkRateLimitHeader
	s.modelMap.want = "CALLER=MEMBER"
	s.allowRegions.check = func(r string) error { return checkRegion(r, true) }
}

// presetValue maps a --preset word to the API enum.
func presetValue(name string) (adminv1.Preset, error) {
	if name == "" {
		return adminv1.Preset_PRESET_UNSPECIFIED, nil
	}
	if p, ok := words.Parse[adminv1.Preset](name); ok {
		return p, nil
	}
	return 0, fmt.Errorf("--preset: want %s, got %q", orList(words.All[adminv1.Preset]()), name)
}

// authKindValue maps an --auth-kind word to the config enum.
func authKindValue(name string) (configv1.AuthKind, error) {
	if name == "" {
		return configv1.AuthKind_AUTH_KIND_UNSPECIFIED, nil
	}
	if k, ok := words.Parse[configv1.AuthKind](name); ok {
		return k, nil
	}
	return 0, fmt.Errorf("--auth-kind: want %s, got %q", orList(words.All[configv1.AuthKind]()), name)
}

// orList joins choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// check validates the values given, after parsing; given names the flags
// present. Problems are usage errors (exit 2), all of them at once.
func (s *specFlags) check(given map[string]bool) error {
	s.given = given
	var problems []string
	add := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	_, err := presetValue(s.preset)
	add(err)
	_, err = authKindValue(s.authKind)
	add(err)
	if s.baseURL != "" {
		u, err := url.Parse(s.baseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add(fmt.Errorf("--base-url: want an absolute http(s) URL, got %q", s.baseURL))
		}
	}
	for flagName, v := range map[string]string{"key-secret": s.keySec, "access-key-secret": s.accessKeySec,
		"client-secret-secret": s.clientSecSec} {
		if v != "" {
			if err := checkName("secret", v); err != nil {
				add(fmt.Errorf("--%s: %w", flagName, err))
			}
		}
	}
	if s.region != "" {
		if err := checkRegion(s.region, false); err != nil {
			add(fmt.Errorf("--region: %w", err))
		}
	}
	if s.recordMember != "" {
		if err := checkName("member", s.recordMember); err != nil {
			add(fmt.Errorf("--record-member: %w", err))
		}
	}
	if s.tokenURL != "" {
		if u, err := url.Parse(s.tokenURL); err != nil || u.Scheme == "" || u.Host == "" {
			add(fmt.Errorf("--token-url: want an absolute URL, got %q", s.tokenURL))
		}
	}
	if s.dayZone != "" {
		if _, err := time.LoadLocation(s.dayZone); err != nil || s.dayZone == "Local" || len(s.dayZone) > 64 {
			add(fmt.Errorf("--day-zone: want an IANA time zone such as UTC or America/Los_Angeles, got %q", s.dayZone))
		}
	}
	if s.off && s.on {
		add(fmt.Errorf("--off and --on exclude each other"))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// presetEnum returns the parsed --preset (check has validated it).
func (s *specFlags) presetEnum() adminv1.Preset {
	p, _ := presetValue(s.preset)
	return p
}

// field binds a flag to the spec field path it sets.
type field struct {
	flag string
	path string
}

// recordFields are the flags of a record in the order their mask paths are
// sent; the paths are ProviderSpec paths (UpdateProviderRequest).
func recordFields() []field {
	return []field{
		{"base-url", "base_url"}, {"models", "models"}, {"key-secret", "key_secret"}, {"region", "region"},
		{"retains-data", "retains_data"}, {"tag", "tags"}, {"price", "prices"},
		{"rpm", "limits.rpm"}, {"input-tpm", "limits.input_tpm"}, {"output-tpm", "limits.output_tpm"},
		{"rpd", "limits.rpd"}, {"max-in-flight", "limits.max_in_flight"}, {"day-zone", "day_zone"},
		{"allow-region", "allowed_regions"}, {"max-attempts", "recovery.max_attempts"},
		{"max-wait", "recovery.max_wait"}, {"attempt-deadline", "recovery.attempt_deadline"},
		{"rate-limit-header", "rate_limit_headers"}, {"default-max-output", "default_max_output"},
		{"priority", "priority"}, {"internal", "internal"},
		{"auth-kind", "auth.kind"}, {"auth-header", "auth.header"}, {"aws-service", "auth.aws_service"},
		{"aws-region", "auth.aws_region"}, {"access-key-secret", "auth.access_key_secret"},
		{"token-url", "auth.token_url"}, {"client-id", "auth.client_id"},
		{"client-secret-secret", "auth.client_secret_secret"},
	}
}

// memberFields are the flags of a member in mask order; the paths are
// PoolMemberSpec paths (UpdatePoolMemberRequest).
func memberFields() []field {
	return []field{
		{"base-url", "base_url"}, {"key-secret", "key_secret"}, {"region", "region"},
		{"retains-data", "retains_data"}, {"tag", "tags"}, {"price", "prices"},
		{"rpm", "limits.rpm"}, {"input-tpm", "limits.input_tpm"}, {"output-tpm", "limits.output_tpm"},
		{"rpd", "limits.rpd"}, {"max-in-flight", "limits.max_in_flight"},
		{"weight", "weight"}, {"order", "order"}, {"model", "model_map"}, {"models", "models"},
		{"account", "account"}, {"off", "off"}, {"on", "off"},
		{"auth-kind", "auth.kind"}, {"auth-header", "auth.header"}, {"aws-service", "auth.aws_service"},
		{"aws-region", "auth.aws_region"}, {"access-key-secret", "auth.access_key_secret"},
		{"token-url", "auth.token_url"}, {"client-id", "auth.client_id"},
		{"client-secret-secret", "auth.client_secret_secret"},
	}
}

// mask returns the update mask of the fields given, without duplicates.
func (s *specFlags) mask(fields []field) *fieldmaskpb.FieldMask {
	var paths []string
	seen := map[string]bool{}
	for _, f := range fields {
		if s.given[f.flag] && !seen[f.path] {
			seen[f.path] = true
			paths = append(paths, f.path)
		}
	}
	return &fieldmaskpb.FieldMask{Paths: paths}
}

// auth returns the Auth of the auth flags given, or nil when none is.
func (s *specFlags) auth() *configv1.Auth {
	kind, _ := authKindValue(s.authKind)
	a := &configv1.Auth{Kind: kind, Header: s.authHeader, AwsService: s.awsService, AwsRegion: s.awsRegion,
		AccessKeySecret: s.accessKeySec, TokenUrl: s.tokenURL, ClientId: s.clientID, ClientSecretSecret: s.clientSecSec}
	if proto.Equal(a, &configv1.Auth{}) {
		return nil
	}
	return a
}

// limits returns the Limits of the limit flags given, or nil.
func (s *specFlags) limits() *configv1.Limits {
	if !s.given["rpm"] && !s.given["input-tpm"] && !s.given["output-tpm"] && !s.given["rpd"] && !s.given["max-in-flight"] {
		return nil
	}
	return &configv1.Limits{Rpm: s.rpm.v, InputTpm: s.inTPM.v, OutputTpm: s.outTPM.v, Rpd: s.rpd.v, MaxInFlight: s.inFlight.v}
}

// modelList returns --models as Model messages; their kind is left for the
// server to resolve.
func (s *specFlags) modelList() []*configv1.Model {
	var out []*configv1.Model
	for _, m := range s.models.vals {
		out = append(out, &configv1.Model{Name: m})
	}
	return out
}

// recordSpec returns the ProviderSpec of the record flags given. With
// recordOnly it holds only the fields a member cannot hold (and --models),
// for `pool add` creating the record.
func (s *specFlags) recordSpec(recordOnly bool) *adminv1.ProviderSpec {
	spec := &adminv1.ProviderSpec{
		AllowedRegions:   s.allowRegions.vals,
		RateLimitHeaders: s.rlHeaders.m,
		DefaultMaxOutput: s.defMaxOut.v,
		Priority:         s.priority.v,
		Internal:         s.internal,
		Models:           s.modelList(),
		DayZone:          s.dayZone,
	}
	if s.given["max-attempts"] || s.given["max-wait"] || s.given["attempt-deadline"] {
		spec.Recovery = &configv1.Recovery{MaxAttempts: s.maxAttempts.v}
		if s.given["max-wait"] && !s.maxWait.empty {
			spec.Recovery.MaxWait = durationpb.New(s.maxWait.d)
		}
		if s.given["attempt-deadline"] && !s.attemptDL.empty {
			spec.Recovery.AttemptDeadline = durationpb.New(s.attemptDL.d)
		}
	}
	if recordOnly {
		return spec
	}
	spec.BaseUrl = s.baseURL
	spec.KeySecret = s.keySec
	spec.Region = s.region
	spec.RetainsData = s.retains
	spec.Tags = s.tags.m
	spec.Prices = s.prices.prices
	spec.Limits = s.limits()
	spec.Auth = s.auth()
	return spec
}

// memberSpec returns the PoolMemberSpec of the member flags given. An
// optional field given empty ("--region=") is left absent, so that on `pool
// set` it goes back to inheriting from the record.
func (s *specFlags) memberSpec() *adminv1.PoolMemberSpec {
	opt := func(flagName, v string) *string {
		if !s.given[flagName] || v == "" {
			return nil
		}
		return proto.String(v)
	}
	spec := &adminv1.PoolMemberSpec{
		BaseUrl:   s.baseURL,
		Auth:      s.auth(),
		KeySecret: opt("key-secret", s.keySec),
		Region:    opt("region", s.region),
		Tags:      s.tags.m,
		Limits:    s.limits(),
		Prices:    s.prices.prices,
		Weight:    s.weight.v,
		Order:     s.order.v,
		ModelMap:  s.modelMap.m,
		Models:    s.models.vals,
		Off:       s.off,
		Account:   opt("account", s.account),
	}
	if s.given["retains-data"] {
		spec.RetainsData = proto.Bool(s.retains)
	}
	return spec
}

// fieldWords returns the function that names a request field of a
// problem the server reports in the CLI's words: the flag that set it
// ("spec.key_secret" is "--key-secret"), and for a price the flag as given
// ("spec.prices[0].cache_read_micros" is "--price claude-x=3,15"). spec are
// the fields of the request's "spec", recordSpec those of its
// "record_spec" (pool add creating the record). A path no flag set is
// returned as it is.
func (s *specFlags) fieldWords(spec, recordSpec []field) func(string) string {
	return func(path string) string {
		if rest, ok := strings.CutPrefix(path, "spec.prices"); ok {
			if i, ok := pathIndex(rest); ok && i < len(s.prices.raw) {
				return "--price " + s.prices.raw[i]
			}
			return "--price"
		}
		for _, sp := range []struct {
			prefix string
			fields []field
		}{{"spec.", spec}, {"record_spec.", recordSpec}} {
			rest, ok := strings.CutPrefix(path, sp.prefix)
			if !ok {
				continue
			}
			best := field{}
			for _, f := range sp.fields {
				if (rest == f.path || strings.HasPrefix(rest, f.path+".") || strings.HasPrefix(rest, f.path+"[")) &&
					len(f.path) > len(best.path) {
					best = f
				}
			}
			if best.flag != "" {
				return "--" + best.flag
			}
		}
		return path
	}
}

// pathIndex reads the list index that starts a field path's rest: "[2].x"
// is 2.
func pathIndex(rest string) (int, bool) {
	inner, ok := strings.CutPrefix(rest, "[")
	if !ok {
		return 0, false
	}
	end := strings.IndexByte(inner, ']')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(inner[:end])
	return n, err == nil && n >= 0
}

// givenOf returns those of the named flags that are present, spelled
// "--name".
func (s *specFlags) givenOf(names ...string) []string {
	var out []string
	for _, n := range names {
		if s.given[n] {
			out = append(out, "--"+n)
		}
	}
	return out
}
