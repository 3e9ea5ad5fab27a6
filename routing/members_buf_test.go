package routing

import (
	"slices"
	"testing"
)

// TestPlansMembersApart: each record's eligible members keep their own
// storage (Begin puts the first ones in the call's buffer, the rest in
// slices of their own), in every record-size mix around the buffer's size.
func TestPlansMembersApart(t *testing.T) {
	t.Parallel()
	p := price(1, 1, 1, 1, "m")
	for _, sizes := range [][]int{{1}, {4}, {5}, {2, 2}, {2, 3}, {3, 1, 1}, {1, 1, 5}, {4, 4, 4}} {
		var recs []*Record
		var want []string
		for i, n := range sizes {
			name := string(rune('a' + i))
			var ms []*Member
			for j := range n {
				ms = append(ms, mem(name+string(rune('1'+j)), p))
			}
			recs = append(recs, rec(name, WireOpenAI, []string{"m"}, ms, priority(int32(10-i))))
		}
		c := begin(t, table(DataRules{}, recs...), NewStates(), chat("m"), 1)
		if len(c.plans) != min(len(sizes), DefaultMaxRecords) {
			t.Fatalf("sizes %v: %d plans", sizes, len(c.plans))
		}
		for _, pl := range c.plans {
			for _, m := range pl.members {
				want = append(want, m.Record.Name+"/"+m.Name)
			}
			if len(pl.members) != len(pl.rec.Members) {
				t.Fatalf("sizes %v: record %s has %d eligible of %d", sizes, pl.rec.Name, len(pl.members), len(pl.rec.Members))
			}
			for i, m := range pl.members {
				if m != pl.rec.Members[i] {
					t.Fatalf("sizes %v: record %s member %d is %s/%s", sizes, pl.rec.Name, i, m.Record.Name, m.Name)
				}
			}
		}
		var got []string
		for _, m := range c.Members() {
			got = append(got, m.Record.Name+"/"+m.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("sizes %v: members %v, want %v", sizes, got, want)
		}
	}
}
