package compile

import (
	"cmp"
	"slices"
	"strconv"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
	"weir.dev/routing/formats"
)

// defaultKeyHeader is the header an API key goes in when the auth names
// none: the one each wire format's own API reads ("authorization" is sent as
// "Bearer <key>"; Bedrock API keys are bearer tokens too).
func defaultKeyHeader(w routing.WireFormat) string {
	if w == routing.WireAnthropic {
		return "x-api-key"
	}
	return "authorization"
}

// resolveAuth converts the auth a member signs with (its own, or its
// record's taken whole) into the routing form, given the member's effective
// key secret.
//
// An auth that names no kind is API-key auth when it names a header or the
// member has a key secret, and no auth otherwise (e.g. a local vLLM). API-key
// auth that names no header uses the wire format's usual header. Naming
// API-key auth (kind API_KEY, or a header) without any key secret in effect
// is a problem: the member could never sign.
func (c *compiler) resolveAuth(where string, a *configv1.Auth, keySecret string, wire routing.WireFormat) routing.Auth {
	out := routing.Auth{
		AWSService:      a.GetAwsService(),
		AWSRegion:       a.GetAwsRegion(),
		AccessKeySecret: a.GetAccessKeySecret(),
		TokenURL:        a.GetTokenUrl(),
		ClientID:        a.GetClientId(),
		ClientSecret:    a.GetClientSecretSecret(),
		Scopes:          slices.Clone(a.GetScopes()),
	}
	if len(out.Scopes) == 0 {
		out.Scopes = nil
	}
	switch a.GetKind() {
	case configv1.AuthKind_AUTH_KIND_UNSPECIFIED:
		if a.GetHeader() == "" && keySecret == "" {
			out.Kind = routing.AuthNone
			return out
		}
		out.Kind = routing.AuthAPIKey
	case configv1.AuthKind_AUTH_KIND_API_KEY:
		out.Kind = routing.AuthAPIKey
	case configv1.AuthKind_AUTH_KIND_SIGV4:
		out.Kind = routing.AuthSigV4
		return out
	case configv1.AuthKind_AUTH_KIND_OAUTH2:
		out.Kind = routing.AuthOAuth2
		return out
	default: // NONE, or an unknown kind authFields reports
		out.Kind = routing.AuthNone
		return out
	}
	out.Header = a.GetHeader()
	if out.Header == "" {
		out.Header = defaultKeyHeader(wire)
	}
	if keySecret == "" {
		c.ps.add(where, "key_secret", "missing: api-key auth needs a key secret")
	}
	return out
}

// authFields checks an Auth message where it is declared: its kind is known,
// it sets no field of another kind, and SigV4 and OAuth2 auth carry what they
// need to sign (R-SEC-3). The token_url is held to the base_url rules of
// R-SEC-2 (clusterOwned as for checkURL): the client secret is sent there.
func (c *compiler) authFields(where string, a *configv1.Auth, clusterOwned bool) {
	if a == nil {
		return
	}
	kind := a.GetKind()
	if _, known := configv1.AuthKind_name[int32(kind)]; !known {
		c.ps.add(where, "auth.kind", "unknown value %d", int32(kind))
		return
	}
	apiKey := kind == configv1.AuthKind_AUTH_KIND_API_KEY || kind == configv1.AuthKind_AUTH_KIND_UNSPECIFIED
	sigv4 := kind == configv1.AuthKind_AUTH_KIND_SIGV4
	oauth2 := kind == configv1.AuthKind_AUTH_KIND_OAUTH2
	kindName := authKindName(kind)
	foreign := func(field, value string, ok bool) {
		if value != "" && !ok {
			c.ps.add(where, "auth."+field, "set, but the auth kind is %s", kindName)
		}
	}
	foreign("header", a.GetHeader(), apiKey)
	foreign("aws_service", a.GetAwsService(), sigv4)
	foreign("aws_region", a.GetAwsRegion(), sigv4)
	foreign("access_key_secret", a.GetAccessKeySecret(), sigv4)
	foreign("token_url", a.GetTokenUrl(), oauth2)
	foreign("client_id", a.GetClientId(), oauth2)
	foreign("client_secret_secret", a.GetClientSecretSecret(), oauth2)
	if len(a.GetScopes()) > 0 && !oauth2 {
		c.ps.add(where, "auth.scopes", "set, but the auth kind is %s", kindName)
	}

	if h := a.GetHeader(); h != "" && apiKey && !validHeaderName(h) {
		c.ps.add(where, "auth.header", "%s is not a header name", strconv.Quote(h))
	}
	need := func(field, value string) {
		if value == "" {
			c.ps.add(where, "auth."+field, "missing: %s auth needs it (R-SEC-3)", kindName)
		}
	}
	switch {
	case sigv4:
		need("access_key_secret", a.GetAccessKeySecret())
		need("aws_region", a.GetAwsRegion())
		need("aws_service", a.GetAwsService())
	case oauth2:
		need("token_url", a.GetTokenUrl())
		need("client_id", a.GetClientId())
		need("client_secret_secret", a.GetClientSecretSecret())
		if u := a.GetTokenUrl(); u != "" {
			checkURL(u, clusterOwned, func(f string, args ...any) { c.ps.add(where, "auth.token_url", f, args...) })
		}
	}
}

// authHasFields reports whether an auth sets anything besides kind and
// header.
func authHasFields(a *configv1.Auth) bool {
	return a.GetAwsService() != "" || a.GetAwsRegion() != "" || a.GetAccessKeySecret() != "" ||
		a.GetTokenUrl() != "" || a.GetClientId() != "" || a.GetClientSecretSecret() != "" ||
		len(a.GetScopes()) > 0
}

// authKindName is the stored name of an auth kind for problem texts;
// "unspecified" for the zero value (and any kind the table lacks).
func authKindName(k configv1.AuthKind) string {
	return cmp.Or(formats.AuthKinds.Stored(k), "unspecified")
}
