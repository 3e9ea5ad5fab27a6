package provider

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Every field of the admin specs must have a twin of the same shape in the
// config protos, or ConfigRecord would drop (panic on) it.
func TestConfigRecordCoversSpec(t *testing.T) {
	pairs := []struct {
		admin, config protoreflect.MessageDescriptor
	}{
		{(&adminv1.ProviderSpec{}).ProtoReflect().Descriptor(), (&configv1.ProviderRecord{}).ProtoReflect().Descriptor()},
		{(&adminv1.PoolMemberSpec{}).ProtoReflect().Descriptor(), (&configv1.Member{}).ProtoReflect().Descriptor()},
	}
	for _, p := range pairs {
		fs := p.admin.Fields()
		for i := 0; i < fs.Len(); i++ {
			if twinField(p.config, fs.Get(i)) == nil {
				t.Errorf("%s.%s has no twin of the same shape in %s", p.admin.FullName(), fs.Get(i).Name(), p.config.FullName())
			}
		}
	}
}

func TestConfigRecordCopiesEveryField(t *testing.T) {
	region := "eu"
	r := &Record{Name: "pool", Pool: true, Spec: &adminv1.ProviderSpec{
		WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Auth:       &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret:  "k",
		Models:     []*configv1.Model{{Name: "m"}},
		Prices:     []*configv1.Price{{Model: "m", InputMicros: proto.Int64(3)}},
		Tags:       map[string]string{"a": "b"},
		Recovery:   &configv1.Recovery{MaxWait: durationpb.New(3e9)},
		Internal:   true,
	}, Members: []*Member{{Name: "one", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://x", Region: &region, Weight: 7, Off: true}}}}
	got := r.ConfigRecord()
	want := &configv1.ProviderRecord{
		Name: "pool", WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI,
		Auth:      &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "api-key"},
		KeySecret: "k", Models: []*configv1.Model{{Name: "m"}},
		Prices:   []*configv1.Price{{Model: "m", InputMicros: proto.Int64(3)}},
		Tags:     map[string]string{"a": "b"},
		Recovery: &configv1.Recovery{MaxWait: durationpb.New(3e9)},
		Internal: true,
		Members:  []*configv1.Member{{Name: "one", BaseUrl: "https://x", Region: &region, Weight: 7, Off: true}},
	}
	if !proto.Equal(got, want) {
		t.Fatalf("ConfigRecord =\n%v\nwant\n%v", got, want)
	}
	// No shared memory: changing the copy leaves the record alone.
	got.Tags["a"] = "changed"
	got.Prices[0].InputMicros = proto.Int64(9)
	if r.Spec.Tags["a"] != "b" || r.Spec.Prices[0].GetInputMicros() != 3 {
		t.Fatal("ConfigRecord shares memory with the record")
	}
}

// specOf and memberSpecOf take back what ConfigRecord gives, and nothing
// that the specs have no field for.
func TestSpecOfInvertsConfigRecord(t *testing.T) {
	r := azurePool()
	cr := r.ConfigRecord()
	cr.Id, cr.Preset = "00000000-0000-0000-0000-000000000001", "azure"
	if got := specOf(cr); !proto.Equal(got, r.Spec) {
		t.Errorf("specOf =\n%v\nwant\n%v", got, r.Spec)
	}
	for i, cm := range cr.GetMembers() {
		cm.Id = "m"
		if got := memberSpecOf(cm); !proto.Equal(got, r.Members[i].Spec) {
			t.Errorf("memberSpecOf(%s) =\n%v\nwant\n%v", cm.GetName(), got, r.Members[i].Spec)
		}
	}
	// No shared memory.
	spec := specOf(cr)
	spec.Auth.Header = "changed"
	if cr.GetAuth().GetHeader() == "changed" {
		t.Error("specOf shares memory with its record")
	}
}
