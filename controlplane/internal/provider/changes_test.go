package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// chg is a Change in short, for tables.
func chg(field, before, after string) *adminv1.Change {
	return &adminv1.Change{Field: field, Before: before, After: after}
}

// plainRecord is an OpenAI record as the store holds it; edit changes a
// copy of its spec.
func plainRecord(edit func(s *adminv1.ProviderSpec)) *Record {
	s := &adminv1.ProviderSpec{
		WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		BaseUrl:    "https://api.openai.com/v1",
		Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "authorization"},
		KeySecret:  "oai",
		Models:     []*configv1.Model{{Name: "gpt-x", Kind: configv1.ModelKind_MODEL_KIND_CHAT}},
		Prices:     []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)},
		Region:     "us",
		Tags:       map[string]string{"team": "ml"},
	}
	if edit != nil {
		edit(s)
	}
	return &Record{Name: "oai", Spec: s, preset: "openai"}
}

// poolRecord is a pool of members eu (weight 2) and us; edit changes a
// copy of the member specs by name.
func poolRecord(edit func(ms map[string]*adminv1.PoolMemberSpec)) *Record {
	r := plainRecord(func(s *adminv1.ProviderSpec) { s.BaseUrl, s.Region = "", "" })
	r.Pool = true
	ms := map[string]*adminv1.PoolMemberSpec{
		"eu": {BaseUrl: "https://eu.example.com/v1", Region: proto.String("eu-west"), Weight: 2, Order: 1},
		"us": {BaseUrl: "https://us.example.com/v1", Region: proto.String("us-east"), Weight: 1, Order: 1},
	}
	if edit != nil {
		edit(ms)
	}
	for _, name := range []string{"eu", "us"} {
		if ms[name] != nil {
			r.Members = append(r.Members, &Member{Name: name, Spec: ms[name]})
		}
	}
	return r
}

func TestChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after *Record
		want          []*adminv1.Change
	}{
		{
			name:   "a record created lists its name and every field it sets",
			before: nil,
			after:  plainRecord(nil),
			want: []*adminv1.Change{
				chg("name", "", "oai"),
				chg("preset", "", "openai"),
				chg("spec.auth.header", "", "authorization"),
				chg("spec.auth.kind", "", "api_key"),
				chg("spec.base_url", "", "https://api.openai.com/v1"),
				chg("spec.key_secret", "", "oai"),
				chg("spec.models[gpt-x]", "", "kind chat"),
				chg("spec.prices[gpt-x]", "", "in 2500000, out 10000000, cache read 250000"),
				chg("spec.region", "", "us"),
				chg("spec.tags[team]", "", "ml"),
				chg("spec.wire_format", "", "openai"),
			},
		},
		{
			name:   "nothing changes",
			before: plainRecord(nil),
			after:  plainRecord(nil),
		},
		{
			name:   "one field",
			before: plainRecord(nil),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.Region = "eu-west" }),
			want:   []*adminv1.Change{chg("spec.region", "us", "eu-west")},
		},
		{
			name:   "a boolean set and a number cleared",
			before: plainRecord(func(s *adminv1.ProviderSpec) { s.Priority = 5 }),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.RetainsData = true }),
			want:   []*adminv1.Change{chg("spec.priority", "5", ""), chg("spec.retains_data", "", "true")},
		},
		{
			name:   "recovery compared setting by setting; a set zero duration is not an unset one",
			before: plainRecord(func(s *adminv1.ProviderSpec) { s.Recovery = &configv1.Recovery{MaxAttempts: 3} }),
			after: plainRecord(func(s *adminv1.ProviderSpec) {
				s.Recovery = &configv1.Recovery{MaxAttempts: 3, MaxWait: durationpb.New(3 * time.Second), AttemptDeadline: durationpb.New(0)}
			}),
			want: []*adminv1.Change{chg("spec.recovery.attempt_deadline", "", "0s"), chg("spec.recovery.max_wait", "", "3s")},
		},
		{
			name:   "an empty message is no change from none",
			before: plainRecord(nil),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.Limits, s.Recovery = &configv1.Limits{}, &configv1.Recovery{} }),
		},
		{
			name:   "limits field by field",
			before: plainRecord(func(s *adminv1.ProviderSpec) { s.Limits = &configv1.Limits{Rpm: 500, InputTpm: 1000} }),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.Limits = &configv1.Limits{Rpm: 600} }),
			want:   []*adminv1.Change{chg("spec.limits.input_tpm", "1000", ""), chg("spec.limits.rpm", "500", "600")},
		},
		{
			name:   "map entries by key",
			before: plainRecord(func(s *adminv1.ProviderSpec) { s.Tags = map[string]string{"team": "ml", "cost": "a"} }),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.Tags = map[string]string{"team": "ai", "tier": "gold"} }),
			want: []*adminv1.Change{
				chg("spec.tags[cost]", "a", ""), chg("spec.tags[team]", "ml", "ai"), chg("spec.tags[tier]", "", "gold"),
			},
		},
		{
			name:   "prices by model: a part changed, a price added",
			before: plainRecord(nil),
			after: plainRecord(func(s *adminv1.ProviderSpec) {
				s.Models = append(s.Models, &configv1.Model{Name: "gpt-y", Kind: configv1.ModelKind_MODEL_KIND_CHAT})
				s.Prices = []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 125_000), price("gpt-y", 1, 2, skip, 4)}
			}),
			want: []*adminv1.Change{
				chg("spec.models[gpt-y]", "", "kind chat"),
				chg("spec.prices[gpt-x]", "in 2500000, out 10000000, cache read 250000", "in 2500000, out 10000000, cache read 125000"),
				chg("spec.prices[gpt-y]", "", "in 1, out 2, cache write 4"),
			},
		},
		{
			name:   "lists comma-joined",
			before: plainRecord(nil),
			after:  plainRecord(func(s *adminv1.ProviderSpec) { s.AllowedRegions = []string{"eu-*", "us-east"} }),
			want:   []*adminv1.Change{chg("spec.allowed_regions", "", "eu-*, us-east")},
		},
		{
			name:   "a URL's password is masked; control characters are quoted",
			before: plainRecord(nil),
			after: plainRecord(func(s *adminv1.ProviderSpec) {
				s.BaseUrl = "https://user:hunter2@api.openai.com/v1"
				s.Tags = map[string]string{"team": "a\nb"}
			}),
			want: []*adminv1.Change{
				chg("spec.base_url", "https://api.openai.com/v1", "https://user:xxxxx@api.openai.com/v1"),
				chg("spec.tags[team]", "ml", `"a\nb"`),
			},
		},
		{
			name:   "a preset re-applied",
			before: plainRecord(nil),
			after:  func() *Record { r := plainRecord(nil); r.preset = "vllm"; return r }(),
			want:   []*adminv1.Change{chg("preset", "openai", "vllm")},
		},
		{
			name:   "a member's fields",
			before: poolRecord(nil),
			after: poolRecord(func(ms map[string]*adminv1.PoolMemberSpec) {
				ms["eu"].Weight, ms["eu"].Off = 3, true
				ms["us"].Tags = map[string]string{"tier": "gold"}
			}),
			want: []*adminv1.Change{
				chg("members[eu].spec.off", "", "true"),
				chg("members[eu].spec.weight", "2", "3"),
				chg("members[us].spec.tags[tier]", "", "gold"),
			},
		},
		{
			name:   "an optional field present but empty is not an absent one",
			before: poolRecord(func(ms map[string]*adminv1.PoolMemberSpec) { ms["eu"].Region = nil }),
			after: poolRecord(func(ms map[string]*adminv1.PoolMemberSpec) {
				ms["eu"].Region, ms["us"].RetainsData = proto.String(""), proto.Bool(false)
			}),
			want: []*adminv1.Change{
				chg("members[eu].spec.region", "", `""`),
				chg("members[us].spec.retains_data", "", "false"),
			},
		},
		{
			name:   "a member added and one removed, whole",
			before: poolRecord(func(ms map[string]*adminv1.PoolMemberSpec) { delete(ms, "eu") }),
			after: poolRecord(func(ms map[string]*adminv1.PoolMemberSpec) {
				delete(ms, "us")
				ms["eu"].Auth = &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"}
				ms["eu"].KeySecret = proto.String("eu-key")
				ms["eu"].Prices = []*configv1.Price{{Model: "gpt-x", InputMicros: proto.Int64(3)}}
				ms["eu"].ModelMap = map[string]string{"gpt-x": "dep-b", "gpt-a": "dep-a"}
			}),
			want: []*adminv1.Change{
				chg("members[eu]", "", "base_url https://eu.example.com/v1; auth (kind api_key, header api-key); key_secret eu-key; "+
					"region eu-west; prices gpt-x (in 3); weight 2; order 1; model_map gpt-a=dep-a, gpt-x=dep-b"),
				chg("members[us]", "base_url https://us.example.com/v1; region us-east; weight 1; order 1", ""),
			},
		},
		{
			name:   "a plain record turned into a pool",
			before: plainRecord(func(s *adminv1.ProviderSpec) { s.Limits = &configv1.Limits{Rpm: 500} }),
			after: func() *Record {
				r := plainRecord(func(s *adminv1.ProviderSpec) { s.BaseUrl = "" })
				r.Pool = true
				r.Members = []*Member{
					{Name: "main", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://api.openai.com/v1", Limits: &configv1.Limits{Rpm: 500}, Weight: 1, Order: 1}},
					{Name: "eu", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.api.openai.com/v1", Weight: 3, Order: 1}, preset: "openai"},
				}
				return r
			}(),
			want: []*adminv1.Change{
				chg("members[eu]", "", "preset openai; base_url https://eu.api.openai.com/v1; weight 3; order 1"),
				chg("members[main]", "", "base_url https://api.openai.com/v1; limits (rpm 500); weight 1; order 1"),
				chg("spec.base_url", "https://api.openai.com/v1", ""),
				chg("spec.limits.rpm", "500", ""),
			},
		},
		{
			name:   "a record without a spec has nothing set",
			before: &Record{Name: "oai"},
			after:  &Record{Name: "oai", Spec: &adminv1.ProviderSpec{Internal: true}},
			want:   []*adminv1.Change{chg("spec.internal", "", "true")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var beforeSpec *adminv1.ProviderSpec
			if tt.before != nil {
				beforeSpec = proto.Clone(tt.before.Spec).(*adminv1.ProviderSpec)
			}
			got := Changes(tt.before, tt.after)
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Changes (-want +got):\n%s", diff)
			}
			if tt.before != nil && !proto.Equal(beforeSpec, tt.before.Spec) {
				t.Errorf("Changes changed the record before")
			}
		})
	}
}

// Every field of ProviderSpec and PoolMemberSpec, set on one side only,
// is a change under its own path, both ways: a field added to the specs is
// covered without Changes naming it.
func TestChangesCoverEverySpecField(t *testing.T) {
	t.Parallel()
	recordFields := (&adminv1.ProviderSpec{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < recordFields.Len(); i++ {
		fd := recordFields.Get(i)
		set := &adminv1.ProviderSpec{}
		set.ProtoReflect().Set(fd, sampleValue(set.ProtoReflect(), fd))
		empty, full := &Record{Name: "r", Spec: &adminv1.ProviderSpec{}}, &Record{Name: "r", Spec: set}
		wantChangeUnder(t, "spec."+string(fd.Name()), Changes(empty, full), true)
		wantChangeUnder(t, "spec."+string(fd.Name()), Changes(full, empty), false)
	}
	memberFields := (&adminv1.PoolMemberSpec{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < memberFields.Len(); i++ {
		fd := memberFields.Get(i)
		set := &adminv1.PoolMemberSpec{}
		set.ProtoReflect().Set(fd, sampleValue(set.ProtoReflect(), fd))
		pool := func(ms *adminv1.PoolMemberSpec) *Record {
			return &Record{Name: "r", Pool: true, Spec: &adminv1.ProviderSpec{}, Members: []*Member{{Name: "m", Spec: ms}}}
		}
		empty, full := pool(&adminv1.PoolMemberSpec{}), pool(set)
		wantChangeUnder(t, "members[m].spec."+string(fd.Name()), Changes(empty, full), true)
		wantChangeUnder(t, "members[m].spec."+string(fd.Name()), Changes(full, empty), false)
		// A whole member added shows the field too.
		whole := Changes(&Record{Name: "r", Spec: &adminv1.ProviderSpec{}}, full)
		if len(whole) != 1 || !strings.Contains(whole[0].GetAfter(), string(fd.Name())+" ") {
			t.Errorf("member added with %s: %v", fd.Name(), whole)
		}
	}
}

// wantChangeUnder checks that changes has exactly the changes of one
// field, under path, each set (added true) or cleared.
func wantChangeUnder(t *testing.T, path string, changes []*adminv1.Change, added bool) {
	t.Helper()
	if len(changes) == 0 {
		t.Errorf("%s: no change", path)
	}
	for _, c := range changes {
		under := c.GetField() == path || strings.HasPrefix(c.GetField(), path+".") || strings.HasPrefix(c.GetField(), path+"[")
		set := c.GetBefore() == "" && c.GetAfter() != ""
		cleared := c.GetBefore() != "" && c.GetAfter() == ""
		if !under || (added && !set) || (!added && !cleared) {
			t.Errorf("%s: change %v", path, c)
		}
	}
}

// sampleValue is a value for field fd of m other than its zero value: every
// scalar set, one element in a list or map, every field of a message set.
func sampleValue(m protoreflect.Message, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch {
	case fd.IsList():
		l := m.NewField(fd).List()
		if fd.Message() != nil {
			e := l.NewElement()
			fill(e.Message())
			l.Append(e)
		} else {
			l.Append(scalarSample(fd))
		}
		return protoreflect.ValueOfList(l)
	case fd.IsMap():
		mp := m.NewField(fd).Map()
		mp.Set(scalarSample(fd.MapKey()).MapKey(), scalarSample(fd.MapValue()))
		return protoreflect.ValueOfMap(mp)
	case fd.Message() != nil:
		v := m.NewField(fd)
		fill(v.Message())
		return v
	}
	return scalarSample(fd)
}

// fill sets every field of m to a sample value.
func fill(m protoreflect.Message) {
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		m.Set(fds.Get(i), sampleValue(m, fds.Get(i)))
	}
}

func scalarSample(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(fd.Enum().Values().Get(1).Number())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1.5)
	}
	panic("no sample for " + fd.FullName())
}

// Changes of one field render its values as the contract says.
func TestChangeValueTexts(t *testing.T) {
	t.Parallel()
	rec := func(s *adminv1.ProviderSpec) *Record { return &Record{Name: "r", Spec: s} }
	tests := []struct {
		name string
		spec *adminv1.ProviderSpec
		want string
	}{
		{"enum", &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC}, "anthropic"},
		{"duration", &adminv1.ProviderSpec{Recovery: &configv1.Recovery{CooldownMax: durationpb.New(90 * time.Minute)}}, "1h30m0s"},
		{"uint", &adminv1.ProviderSpec{Recovery: &configv1.Recovery{MaxAttempts: 3}}, "3"},
		{"int", &adminv1.ProviderSpec{DefaultMaxOutput: 8192}, "8192"},
		{"bool", &adminv1.ProviderSpec{Internal: true}, "true"},
		{"scopes", &adminv1.ProviderSpec{Auth: &configv1.Auth{Scopes: []string{"a", "b"}}}, "a, b"},
		{"price parts", &adminv1.ProviderSpec{Prices: []*configv1.Price{price("m", 1, 2, 3, 4)}}, "in 1, out 2, cache read 3, cache write 4"},
		{"price without parts", &adminv1.ProviderSpec{Prices: []*configv1.Price{{Model: "m"}}}, "(empty)"},
		{"model kind", &adminv1.ProviderSpec{Models: []*configv1.Model{{Name: "e", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}}}, "kind embeddings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Changes(rec(&adminv1.ProviderSpec{}), rec(tt.spec))
			if len(got) != 1 || got[0].GetBefore() != "" || got[0].GetAfter() != tt.want {
				t.Errorf("Changes = %v, want one change to %q", got, tt.want)
			}
		})
	}
}
