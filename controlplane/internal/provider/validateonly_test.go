package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// state is everything a validate_only request must leave as it was: the
// rows of every table a change writes (audit and outbox included), the
// desired and published revisions of the tenant's and the cluster's
// snapshots, and what GetProvider answers for some records (revision
// included; nil for a record that does not exist).
type state struct {
	Rows      counts
	Snapshots [][2]int64
	Details   []*adminv1.ProviderDetail
}

func (h *harness) state(records ...string) state {
	h.t.Helper()
	ctx := context.Background()
	st := state{Rows: h.counts()}
	for _, owner := range []sqlc.Tenant{h.tenants["acme"], {ID: store.Cluster}} {
		rev, err := h.st.Q.GetConfigRevision(ctx, owner.ID)
		if err != nil && !store.IsNotFound(err) {
			h.t.Fatal(err)
		}
		st.Snapshots = append(st.Snapshots, [2]int64{rev.DesiredRevision, rev.PublishedRevision})
	}
	for _, name := range records {
		resp, err := h.as("alice").providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: name}))
		switch {
		case err == nil:
			st.Details = append(st.Details, resp.Msg.GetDetail())
		case connect.CodeOf(err) == connect.CodeNotFound:
			st.Details = append(st.Details, nil)
		default:
			h.t.Fatalf("GetProvider %s: %v", name, err)
		}
	}
	return st
}

// unchanged fails the test when the state differs from before.
func (h *harness) unchanged(what string, before state, records ...string) {
	h.t.Helper()
	if diff := cmp.Diff(before, h.state(records...), protocmp.Transform()); diff != "" {
		h.t.Errorf("%s changed the state (-before +after):\n%s", what, diff)
	}
}

// storedFields are what a preview cannot know before the write: the ids,
// times and revision of what it creates or changes.
var storedFields = cmp.Options{
	protocmp.Transform(),
	protocmp.IgnoreFields(&adminv1.ProviderRecord{}, "id", "revision", "created_at", "updated_at"),
	protocmp.IgnoreFields(&adminv1.PoolMember{}, "id", "created_at", "updated_at"),
}

// previewThenSave runs a request with validate_only, checks that it wrote
// nothing (records are read back through GetProvider) and found no
// problem, then runs it for real and checks that both answers are the same
// but for storedFields: record, members, warnings and changes.
func previewThenSave[T proto.Message](t *testing.T, h *harness, records []string, call func(validateOnly bool) (T, error)) (preview, saved T) {
	t.Helper()
	before := h.state(records...)
	preview, err := call(true)
	if err != nil {
		t.Fatalf("validate_only: %v (problems %v)", err, problemsOf(err))
	}
	h.unchanged("a validate_only request", before, records...)
	if ps := preview.ProtoReflect().Get(preview.ProtoReflect().Descriptor().Fields().ByName("problems")).List(); ps.Len() != 0 {
		t.Fatalf("validate_only found problems: %v", preview)
	}
	saved, err = call(false)
	if err != nil {
		t.Fatalf("the same request for real: %v (problems %v)", err, problemsOf(err))
	}
	if diff := cmp.Diff(preview, saved, storedFields); diff != "" {
		t.Errorf("validate_only answer differs from the real one (-preview +saved):\n%s", diff)
	}
	if after := h.state(); after.Rows.Audit != before.Rows.Audit+1 || after.Rows.Outbox != before.Rows.Outbox+1 {
		t.Errorf("the real request wrote %+v -> %+v, want one audit and one outbox row", before.Rows, after.Rows)
	}
	return preview, saved
}

func TestValidateOnlyCreateProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "oai", "api.openai.com")
	c := h.as("alice")
	r := &adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "oai", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{
			KeySecret: "oai", Region: "us", Models: models("gpt-x", "text-embed-3"), Limits: &configv1.Limits{Rpm: 500},
			Prices: []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)}, Recovery: &configv1.Recovery{},
		},
	}
	call := func(vo bool) (*adminv1.CreateProviderResponse, error) {
		r.ValidateOnly = vo
		resp, err := c.providers.CreateProvider(ctx, req(r))
		return msgOf(resp), err
	}
	pre, _ := previewThenSave(t, h, []string{"oai"}, call)
	if rec := pre.GetRecord(); rec.GetId() != "" || rec.GetRevision() != 0 || rec.GetCreatedAt() != nil || rec.GetSpec().GetBaseUrl() != OpenAIBaseURL {
		t.Errorf("preview record = %v", rec)
	}
	want := []*adminv1.Change{
		chg("name", "", "oai"),
		chg("preset", "", "openai"),
		chg("spec.auth.header", "", "authorization"),
		chg("spec.auth.kind", "", "api_key"),
		chg("spec.base_url", "", OpenAIBaseURL),
		chg("spec.key_secret", "", "oai"),
		chg("spec.limits.rpm", "", "500"),
		chg("spec.models[gpt-x]", "", "kind chat"),
		chg("spec.models[text-embed-3]", "", "kind embeddings"),
		chg("spec.prices[gpt-x]", "", "in 2500000, out 10000000, cache read 250000"),
		chg("spec.region", "", "us"),
		chg("spec.wire_format", "", "openai"),
	}
	if diff := cmp.Diff(want, pre.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// The name is taken now: validate_only is refused as the request would be.
	before := h.state("oai")
	_, err := call(true)
	wantCode(t, err, connect.CodeAlreadyExists)
	// Roles and tenants are checked as for the request.
	r.Name = "other"
	_, err = h.as("cora").providers.CreateProvider(ctx, req(r))
	wantCode(t, err, connect.CodePermissionDenied)
	_, err = h.as("bob").providers.CreateProvider(ctx, req(r))
	wantCode(t, err, connect.CodeNotFound)
	h.unchanged("refused validate_only requests", before, "oai")
}

func msgOf[T any](resp *connect.Response[T]) *T {
	if resp == nil {
		return nil
	}
	return resp.Msg
}

// A validate_only request with problems answers OK with exactly the
// problems the request fails with, and writes nothing.
func TestValidateOnlyReturnsProblems(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	tests := []struct {
		name string
		call func(validateOnly bool) ([]*adminv1.Problem, []*adminv1.Change, error)
	}{
		{"CreateProvider", func(vo bool) ([]*adminv1.Problem, []*adminv1.Change, error) {
			resp, err := c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
				Tenant: "acme", Name: "Azure", Preset: adminv1.Preset_PRESET_AZURE_OPENAI, ValidateOnly: vo,
				Spec: &adminv1.ProviderSpec{KeySecret: "nope", Region: "eu west"},
			}))
			return msgOf(resp).GetProblems(), msgOf(resp).GetChanges(), err
		}},
		{"UpdateProvider", func(vo bool) ([]*adminv1.Problem, []*adminv1.Change, error) {
			resp, err := c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
				Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{Models: models("gpt-y")}, UpdateMask: mask("models", "colour"), ValidateOnly: vo,
			}))
			return msgOf(resp).GetProblems(), msgOf(resp).GetChanges(), err
		}},
		{"AddPoolMember", func(vo bool) ([]*adminv1.Problem, []*adminv1.Change, error) {
			resp, err := c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
				Tenant: "acme", Record: "bedrock-eu", Member: "Frankfurt", ValidateOnly: vo,
				Spec: &adminv1.PoolMemberSpec{BaseUrl: "http://bedrock-runtime.eu-central-1.amazonaws.com", Weight: 10001},
			}))
			return msgOf(resp).GetProblems(), msgOf(resp).GetChanges(), err
		}},
		{"UpdatePoolMember", func(vo bool) ([]*adminv1.Problem, []*adminv1.Change, error) {
			resp, err := c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
				Tenant: "acme", Record: "azure-eu", Member: "sweden", ValidateOnly: vo,
				Spec: &adminv1.PoolMemberSpec{Weight: 10001, Models: []string{"gpt-z"}}, UpdateMask: mask("weight", "models"),
			}))
			return msgOf(resp).GetProblems(), msgOf(resp).GetChanges(), err
		}},
	}
	for _, tt := range tests {
		before := h.state("azure-eu", "bedrock-eu", "Azure")
		_, _, err := tt.call(false)
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("%s: error = %v, want InvalidArgument", tt.name, err)
		}
		var want []*adminv1.Problem
		var ce *connect.Error
		if errors.As(err, &ce) {
			for _, d := range ce.Details() {
				if v, err := d.Value(); err == nil {
					if ve, ok := v.(*adminv1.ValidationError); ok {
						want = ve.GetProblems()
					}
				}
			}
		}
		got, changes, err := tt.call(true)
		if err != nil {
			t.Fatalf("%s with validate_only: %v", tt.name, err)
		}
		if len(want) == 0 || len(changes) == 0 {
			t.Errorf("%s: problems %v, changes %v", tt.name, want, changes)
		}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s: validate_only problems (-request's +validate_only's):\n%s", tt.name, diff)
		}
		h.unchanged(tt.name+" with problems", before, "azure-eu", "bedrock-eu", "Azure")
	}
}

func TestValidateOnlyUpdateProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	current := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t).GetDetail().GetRecord()
	r := &adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", ExpectedRevision: current.GetRevision(),
		Spec: &adminv1.ProviderSpec{
			Prices: []*configv1.Price{price("gpt-x", 2_500_000, 10_000_000, 250_000)}, Tags: map[string]string{"team": "ml"},
			AllowedRegions: []string{"eu-*"}, Region: "",
		},
		UpdateMask: mask("prices", "tags", "allowed_regions", "region"),
	}
	call := func(vo bool) (*adminv1.UpdateProviderResponse, error) {
		r.ValidateOnly = vo
		resp, err := c.providers.UpdateProvider(ctx, req(r))
		return msgOf(resp), err
	}
	pre, _ := previewThenSave(t, h, []string{"azure-eu"}, call)
	// The preview's revision is the one it was computed against.
	if pre.GetRecord().GetRevision() != current.GetRevision() {
		t.Errorf("preview revision %d, want %d", pre.GetRecord().GetRevision(), current.GetRevision())
	}
	// region was named in the mask but stays empty: not a change.
	want := []*adminv1.Change{
		chg("spec.allowed_regions", "", "eu-*"),
		chg("spec.prices[gpt-x]", "", "in 2500000, out 10000000, cache read 250000"),
		chg("spec.tags[team]", "", "ml"),
	}
	if diff := cmp.Diff(want, pre.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// The revision moved: a stale expected_revision is Aborted, with
	// validate_only too; other refusals stay errors.
	before := h.state("azure-eu")
	_, err := call(true)
	wantCode(t, err, connect.CodeAborted)
	_, err = c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "nope", UpdateMask: mask("region"), ValidateOnly: true}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{Internal: true}, UpdateMask: mask("internal"), ValidateOnly: true,
	}))
	wantCode(t, err, connect.CodePermissionDenied)
	h.unchanged("refused validate_only updates", before, "azure-eu")

	// A field set to the value it has is no change.
	same := mustOK(c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{
		Tenant: "acme", Name: "azure-eu", Spec: &adminv1.ProviderSpec{Tags: map[string]string{"team": "ml"}}, UpdateMask: mask("tags"), ValidateOnly: true,
	})))(t)
	if len(same.GetChanges()) != 0 {
		t.Errorf("changes of an update to the same value: %v", same.GetChanges())
	}
	h.unchanged("a validate_only update to the same value", before, "azure-eu")
}

func TestValidateOnlyPoolMembers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	h.secret("acme", "oai", "api.openai.com", "eu.api.openai.com")
	c := h.as("paul")
	revision := func(record string) uint64 {
		return mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: record})))(t).GetDetail().GetRecord().GetRevision()
	}

	// Add a member to a pool.
	add := &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "germany", ExpectedRevision: revision("azure-eu"),
		Spec: &adminv1.PoolMemberSpec{
			BaseUrl: "https://acme-sweden.openai.azure.com/de", KeySecret: proto.String("azure-se"), Region: proto.String("eu-central"), Order: 2,
		},
	}
	addCall := func(vo bool) (*adminv1.AddPoolMemberResponse, error) {
		add.ValidateOnly = vo
		resp, err := c.pools.AddPoolMember(ctx, req(add))
		return msgOf(resp), err
	}
	pre, _ := previewThenSave(t, h, []string{"azure-eu"}, addCall)
	want := []*adminv1.Change{chg("members[germany]", "",
		"base_url https://acme-sweden.openai.azure.com/de; key_secret azure-se; region eu-central; weight 1; order 2")}
	if diff := cmp.Diff(want, pre.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("add: changes (-want +got):\n%s", diff)
	}
	if pre.GetMember().GetMember().GetId() != "" || pre.GetMember().GetEffective().GetRegion() != "eu-central" {
		t.Errorf("add: preview member = %v", pre.GetMember())
	}
	before := h.state("azure-eu")
	_, err := addCall(true) // stale revision
	wantCode(t, err, connect.CodeAborted)
	add.ExpectedRevision = 0
	_, err = addCall(true) // the member exists now
	wantCode(t, err, connect.CodeAlreadyExists)
	h.unchanged("refused validate_only adds", before, "azure-eu")

	// Change a member.
	set := &adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "france", ExpectedRevision: revision("azure-eu"),
		Spec: &adminv1.PoolMemberSpec{Weight: 3, Off: true, Region: proto.String("eu-west")}, UpdateMask: mask("weight", "off", "region"),
	}
	setCall := func(vo bool) (*adminv1.UpdatePoolMemberResponse, error) {
		set.ValidateOnly = vo
		resp, err := c.pools.UpdatePoolMember(ctx, req(set))
		return msgOf(resp), err
	}
	pset, _ := previewThenSave(t, h, []string{"azure-eu"}, setCall)
	want = []*adminv1.Change{chg("members[france].spec.off", "", "true"), chg("members[france].spec.weight", "2", "3")}
	if diff := cmp.Diff(want, pset.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("set: changes (-want +got):\n%s", diff)
	}
	before = h.state("azure-eu")
	_, err = setCall(true)
	wantCode(t, err, connect.CodeAborted)
	_, err = c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{
		Tenant: "acme", Record: "azure-eu", Member: "nope", UpdateMask: mask("off"), ValidateOnly: true,
	}))
	wantCode(t, err, connect.CodeNotFound)
	h.unchanged("refused validate_only sets", before, "azure-eu")

	// Remove a member.
	remove := &adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "azure-eu", Member: "germany", ExpectedRevision: revision("azure-eu")}
	removeCall := func(vo bool) (*adminv1.RemovePoolMemberResponse, error) {
		remove.ValidateOnly = vo
		resp, err := c.pools.RemovePoolMember(ctx, req(remove))
		return msgOf(resp), err
	}
	prm, _ := previewThenSave(t, h, []string{"azure-eu"}, removeCall)
	want = []*adminv1.Change{chg("members[germany]",
		"base_url https://acme-sweden.openai.azure.com/de; key_secret azure-se; region eu-central; weight 1; order 2", "")}
	if diff := cmp.Diff(want, prm.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("remove: changes (-want +got):\n%s", diff)
	}
	before = h.state("azure-eu")
	_, err = removeCall(true)
	wantCode(t, err, connect.CodeAborted)
	h.unchanged("a refused validate_only remove", before, "azure-eu")
}

// A plain record turned into a pool and back, each step previewed first.
func TestValidateOnlyConvertsPlainAndBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "oai", "api.openai.com", "eu.api.openai.com")
	c := h.as("alice")
	mustOK(c.providers.CreateProvider(ctx, req(&adminv1.CreateProviderRequest{
		Tenant: "acme", Name: "oai", Preset: adminv1.Preset_PRESET_OPENAI,
		Spec: &adminv1.ProviderSpec{KeySecret: "oai", Region: "us", Models: models("gpt-x"), Limits: &configv1.Limits{Rpm: 500}},
	})))(t)
	add := &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "oai", Member: "eu", RecordMember: "main",
		Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://eu.api.openai.com/v1", Region: proto.String("eu"), Weight: 3},
	}
	pre, _ := previewThenSave(t, h, []string{"oai"}, func(vo bool) (*adminv1.AddPoolMemberResponse, error) {
		add.ValidateOnly = vo
		resp, err := c.pools.AddPoolMember(ctx, req(add))
		return msgOf(resp), err
	})
	want := []*adminv1.Change{
		chg("members[eu]", "", "base_url https://eu.api.openai.com/v1; region eu; weight 3; order 1"),
		chg("members[main]", "", "base_url "+OpenAIBaseURL+"; limits (rpm 500); weight 1; order 1"),
		chg("spec.base_url", OpenAIBaseURL, ""),
		chg("spec.limits.rpm", "500", ""),
	}
	if diff := cmp.Diff(want, pre.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("convert: changes (-want +got):\n%s", diff)
	}
	if !pre.GetRecordConverted() || pre.GetRecord().GetKind() != adminv1.RecordKind_RECORD_KIND_POOL {
		t.Errorf("convert preview = %v", pre)
	}
	mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "oai", Member: "main"})))(t)

	// The last member goes: the record takes its fields.
	remove := &adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "oai", Member: "eu"}
	prm, _ := previewThenSave(t, h, []string{"oai"}, func(vo bool) (*adminv1.RemovePoolMemberResponse, error) {
		remove.ValidateOnly = vo
		resp, err := c.pools.RemovePoolMember(ctx, req(remove))
		return msgOf(resp), err
	})
	want = []*adminv1.Change{
		chg("members[eu]", "base_url https://eu.api.openai.com/v1; region eu; weight 3; order 1", ""),
		chg("spec.base_url", "", "https://eu.api.openai.com/v1"),
		chg("spec.region", "us", "eu"),
	}
	if diff := cmp.Diff(want, prm.GetChanges(), protocmp.Transform()); diff != "" {
		t.Errorf("back to plain: changes (-want +got):\n%s", diff)
	}
	if !prm.GetRecordPlain() {
		t.Errorf("back to plain preview = %v", prm)
	}
}

// AddPoolMember creating a pool, previewed.
func TestValidateOnlyAddCreatesPool(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "ant", "api.anthropic.com")
	c := h.as("alice")
	add := &adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "claude", Member: "one", Preset: adminv1.Preset_PRESET_ANTHROPIC,
		RecordSpec: &adminv1.ProviderSpec{Models: models("claude-x"), KeySecret: "ant"},
		Spec:       &adminv1.PoolMemberSpec{BaseUrl: "https://api.anthropic.com"},
	}
	pre, _ := previewThenSave(t, h, []string{"claude"}, func(vo bool) (*adminv1.AddPoolMemberResponse, error) {
		add.ValidateOnly = vo
		resp, err := c.pools.AddPoolMember(ctx, req(add))
		return msgOf(resp), err
	})
	if !pre.GetRecordCreated() || pre.GetRecord().GetId() != "" {
		t.Errorf("preview = %v", pre)
	}
	fields := map[string]bool{}
	for _, ch := range pre.GetChanges() {
		fields[ch.GetField()] = true
	}
	for _, f := range []string{"name", "preset", "spec.wire_format", "spec.key_secret", "members[one]"} {
		if !fields[f] {
			t.Errorf("changes lack %s: %v", f, pre.GetChanges())
		}
	}
}

// A last member with a model map cannot go (FailedPrecondition): that stays
// an error with validate_only.
func TestValidateOnlyKeepsOtherRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("alice")
	mustOK(c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "ireland"})))(t)
	before := h.state("bedrock-eu")
	_, err := c.pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "stockholm", ValidateOnly: true}))
	wantCode(t, err, connect.CodeFailedPrecondition)
	_, err = h.as("cora").pools.RemovePoolMember(ctx, req(&adminv1.RemovePoolMemberRequest{Tenant: "acme", Record: "bedrock-eu", Member: "stockholm", ValidateOnly: true}))
	wantCode(t, err, connect.CodePermissionDenied)
	h.unchanged("refused validate_only removes", before, "bedrock-eu")
}

// GetProvider says how the edges route over the record.
func TestGetProviderRoutingSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	c := h.as("cora")
	d := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "azure-eu"})))(t).GetDetail()
	if got, want := d.GetRoutingSummary(), "Weighted across 2 members; default recovery"; got != want {
		t.Errorf("routing summary %q, want %q", got, want)
	}
}

// Every column save writes has its twin in the row loadRecord reads, so
// wouldBeStored reads back what save would write.
func TestColumnsHaveRowTwins(t *testing.T) {
	t.Parallel()
	for _, p := range []struct{ cols, row any }{
		{recordColumns{}, sqlc.ProviderRecord{}},
		{memberColumns{}, sqlc.PoolMember{}},
	} {
		ct, rt := reflect.TypeOf(p.cols), reflect.TypeOf(p.row)
		for i := 0; i < ct.NumField(); i++ {
			f := ct.Field(i)
			if rf, ok := rt.FieldByName(f.Name); !ok || rf.Type != f.Type {
				t.Errorf("%s.%s has no twin of type %s in %s", ct.Name(), f.Name, f.Type, rt.Name())
			}
		}
	}
}

// The preview as docs/operations.md shows it: Connect JSON over HTTP.
func TestValidateOnlyOverConnectJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	seed(t, h, "alice")
	before := h.state("azure-eu")
	body := `{"tenant":"acme","name":"azure-eu","spec":{"recovery":{"maxWait":"3s"}},"updateMask":"recovery.maxWait","validateOnly":true}`
	hr, err := http.NewRequest(http.MethodPost, h.url+"/weir.admin.v1.ProviderService/UpdateProvider", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+h.tokens["alice"])
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	want := `"changes":[{"field":"spec.recovery.max_wait","after":"3s"}]`
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ReplaceAll(string(raw), " ", ""), want) {
		t.Errorf("status %d, body %s", resp.StatusCode, raw)
	}
	t.Logf("%s", raw)
	h.unchanged("a Connect JSON preview", before, "azure-eu")
}
