package compile

import (
	"slices"

	"weir.dev/routing/rules"
)

// The name formats are weir.dev/routing/rules; these names keep the
// compiler readable.
const (
	nameRule          = rules.NameRule
	regionPatternRule = rules.RegionPatternRule
)

func validName(s string) bool          { return rules.ValidName(s) }
func validRegionPattern(s string) bool { return rules.ValidRegionPattern(s) }

// stringsOrNil copies a list, nil when it is empty (which the routing core
// reads as "no restriction").
func stringsOrNil(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}
