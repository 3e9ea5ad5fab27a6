package compile

// Problem codes: a stable snake_case identifier per kind of broken rule. The
// control plane's admin API returns them as weir.admin.v1.Problem.code, so
// they are a contract: new codes may be added, none renamed.
const (
	CodeRequired       = "required"
	CodeInvalidName    = "invalid_name"
	CodeInvalidValue   = "invalid_value"
	CodeTooMany        = "too_many"
	CodeOutOfRange     = "out_of_range"
	CodeNegative       = "negative"
	CodeDuplicate      = "duplicate"
	CodeNotHTTPS       = "not_https"
	CodePrivateAddress = "private_address"
	CodeInvalidURL     = "invalid_url"
	CodeUnknownSecret  = "unknown_secret"
	CodePriceNotWhole  = "price_not_whole"
	CodeNotAModel      = "not_a_model"
	CodeNotAllowed     = "not_allowed"
	// CodeWireMismatch: a setting does not fit the wire format of the
	// endpoint it applies to (an auth kind, a model kind, a preset).
	CodeWireMismatch = "wire_mismatch"
)
