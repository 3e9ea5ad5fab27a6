package routing

import (
	"path"
	"strings"
)

// MaxRegionsInHeader is the most names x-weir-regions may carry (R-ELIG-3).
const MaxRegionsInHeader = 32

// ParseRegions parses the x-weir-regions header (R-ELIG-3): 1–32 names
// separated by commas, each 1–64 of [A-Za-z0-9_-], spaces around names
// allowed. An empty or absent header returns nil, nil. Anything else is an
// invalid_request error naming what is wrong.
func ParseRegions(raw string) ([]string, *Error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	parts := strings.Split(raw, ",")
	if len(parts) > MaxRegionsInHeader {
		return nil, newError(400, CodeInvalidRequest, "x-weir-regions lists more than 32 regions")
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if !validRegionName(p) {
			return nil, newError(400, CodeInvalidRequest, "x-weir-regions: each region must be 1-64 of [A-Za-z0-9_-]")
		}
		out = append(out, p)
	}
	return out, nil
}

func validRegionName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// regionAllowed reports whether region matches any of the patterns: exact
// names or globs such as "eu-*" (path.Match syntax). A member with no region
// matches no pattern: any region rule refuses it (R-ELIG-2, R-ELIG-3).
func regionAllowed(region string, patterns []string) bool {
	if region == "" {
		return false
	}
	for _, p := range patterns {
		if p == region {
			return true
		}
		if ok, err := path.Match(p, region); err == nil && ok {
			return true
		}
	}
	return false
}
