package compile

import (
	"strconv"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing/formats"
	"weir.dev/routing/rules"
)

// auth checks an Auth message where it is declared (l is its path): its
// kind is known, it sets no field of another kind, its header is a header
// name, SigV4 and OAuth2 auth carry what they need to sign (R-SEC-3), the
// token URL follows R-SEC-2 (the client secret is sent there), and named
// secrets are valid (and known, when RecordRules says).
func (v *recordChecker) auth(l loc, a *configv1.Auth) {
	kind := a.GetKind()
	if _, known := configv1.AuthKind_name[int32(kind)]; !known {
		v.add(l.at("kind"), CodeInvalidValue, "unknown value %d", int32(kind))
		return
	}
	apiKey := kind == configv1.AuthKind_AUTH_KIND_API_KEY || kind == configv1.AuthKind_AUTH_KIND_UNSPECIFIED
	sigv4 := kind == configv1.AuthKind_AUTH_KIND_SIGV4
	oauth2 := kind == configv1.AuthKind_AUTH_KIND_OAUTH2
	v.foreignAuthFields(l, a, apiKey, sigv4, oauth2)
	if h := a.GetHeader(); h != "" && apiKey && !rules.ValidHeaderName(h) {
		v.add(l.at("header"), CodeInvalidValue, "%s is not a header name", strconv.Quote(h))
	}
	need := func(name, value string) {
		if value == "" {
			v.add(l.at(name), CodeRequired, "missing: %s auth needs it (R-SEC-3)", authKindName(kind))
		}
	}
	switch {
	case sigv4:
		need("access_key_secret", a.GetAccessKeySecret())
		need("aws_region", a.GetAwsRegion())
		need("aws_service", a.GetAwsService())
		v.secretName(l.at("access_key_secret"), a.GetAccessKeySecret())
		if reg := a.GetAwsRegion(); reg != "" && !rules.ValidRegion(reg) {
			v.add(l.at("aws_region"), CodeInvalidValue, "%s %s", strconv.Quote(reg), rules.RegionRule)
		}
	case oauth2:
		need("token_url", a.GetTokenUrl())
		need("client_id", a.GetClientId())
		need("client_secret_secret", a.GetClientSecretSecret())
		if u := a.GetTokenUrl(); u != "" {
			v.checkURL(l.at("token_url"), u)
		}
		v.secretName(l.at("client_secret_secret"), a.GetClientSecretSecret())
	}
}

// foreignAuthFields reports each field set that belongs to another auth
// kind than a's.
func (v *recordChecker) foreignAuthFields(l loc, a *configv1.Auth, apiKey, sigv4, oauth2 bool) {
	foreign := func(name string, set, ok bool) {
		if set && !ok {
			v.add(l.at(name), CodeNotAllowed, "set, but the auth kind is %s", authKindName(a.GetKind()))
		}
	}
	foreign("header", a.GetHeader() != "", apiKey)
	foreign("aws_service", a.GetAwsService() != "", sigv4)
	foreign("aws_region", a.GetAwsRegion() != "", sigv4)
	foreign("access_key_secret", a.GetAccessKeySecret() != "", sigv4)
	foreign("token_url", a.GetTokenUrl() != "", oauth2)
	foreign("client_id", a.GetClientId() != "", oauth2)
	foreign("client_secret_secret", a.GetClientSecretSecret() != "", oauth2)
	foreign("scopes", len(a.GetScopes()) > 0, oauth2)
}

// endpointAuth checks the auth one endpoint signs with against what the
// endpoint has (l is the endpoint; kindAt where a wrong kind is reported):
// API-key and google-service-account auth need a key secret in effect, or
// the endpoint could never sign; google-service-account auth signs only
// for gemini endpoints (Vertex AI), which is judged only when the
// endpoint's format is known (a missing or unknown one is reported where it
// is set). An auth that names no kind is API-key
// auth when it names a header.
func (v *recordChecker) endpointAuth(l, kindAt loc, a *configv1.Auth, keySecret string, wire configv1.WireFormat) {
	kind := a.GetKind()
	apiKey := kind == configv1.AuthKind_AUTH_KIND_API_KEY ||
		(kind == configv1.AuthKind_AUTH_KIND_UNSPECIFIED && a.GetHeader() != "")
	google := kind == configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT
	switch {
	case apiKey && keySecret == "":
		v.add(l.at("key_secret"), CodeRequired, "missing: api-key auth needs a key secret")
	case google && keySecret == "":
		v.add(l.at("key_secret"), CodeRequired, "missing: google-service-account auth needs a key secret holding the service account's JSON key")
	}
	if _, known := formats.WireFormats.ByEnum(wire); google && known && wire != configv1.WireFormat_WIRE_FORMAT_GEMINI {
		v.add(kindAt, CodeWireMismatch, "google-service-account auth signs for gemini endpoints (Vertex AI) only, but this endpoint's format is %s", wireWord(wire))
	}
}

// wireWord names a wire format as people write it ("bedrock").
func wireWord(w configv1.WireFormat) string {
	if e, ok := formats.WireFormats.ByEnum(w); ok {
		return e.Word
	}
	return strconv.Itoa(int(w))
}
