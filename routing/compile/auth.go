package compile

import (
	"cmp"
	"slices"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
	"weir.dev/routing/formats"
)

// defaultKeyHeader is the header an API key goes in when the auth names
// none: the one each wire format's own API reads ("authorization" is sent as
// "Bearer <key>"; Bedrock API keys are bearer tokens too).
func defaultKeyHeader(w routing.WireFormat) string {
	switch w {
	case routing.WireAnthropic:
		return "x-api-key"
	case routing.WireGemini:
		return "x-goog-api-key"
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
func resolveAuth(a *configv1.Auth, keySecret string, wire routing.WireFormat) routing.Auth {
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
	case configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT:
		out.Kind = routing.AuthGoogleServiceAccount
		return out
	default: // NONE, or an unknown kind CheckRecord reports
		out.Kind = routing.AuthNone
		return out
	}
	out.Header = a.GetHeader()
	if out.Header == "" {
		out.Header = defaultKeyHeader(wire)
	}
	return out
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
