package compile

import (
	"weir.dev/routing/rules"
)

// Limits on names and sizes that the snapshot must respect.
const (
	maxNameLen  = rules.MaxNameLen
	maxMembers  = 16
	maxWeight   = 10000
	maxModelLen = rules.MaxModelLen
)

// The format rules are weir.dev/routing/rules, shared with the control plane so
// that both refuse the same things; these names keep the compiler readable.

const (
	nameRule          = rules.NameRule
	regionRule        = rules.RegionRule
	regionPatternRule = rules.RegionPatternRule
)

func validName(s string) bool          { return rules.ValidName(s) }
func validRegion(s string) bool        { return rules.ValidRegion(s) }
func validRegionPattern(s string) bool { return rules.ValidRegionPattern(s) }
func validModelName(s string) bool     { return rules.ValidModelName(s) }
func validHeaderName(s string) bool    { return rules.ValidHeaderName(s) }

// checkURL reports each R-SEC-2 problem of an upstream URL through add
// (rules.CheckURL); it never echoes the URL.
func checkURL(raw string, clusterOwned bool, add func(format string, args ...any)) {
	for _, p := range rules.CheckURL(raw, clusterOwned) {
		add("%s", p.Message)
	}
}
