package compile

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the compiled tables")

// readInputs reads testdata/NAME.json (a TenantSnapshot) and, when present,
// testdata/NAME.cluster.json (a ClusterSnapshot), both in protojson.
func readInputs(t *testing.T, name string) (*configv1.TenantSnapshot, *configv1.ClusterSnapshot) {
	t.Helper()
	ts := &configv1.TenantSnapshot{}
	mustUnmarshal(t, filepath.Join("testdata", name+".json"), ts)
	var cs *configv1.ClusterSnapshot
	if path := filepath.Join("testdata", name+".cluster.json"); fileExists(path) {
		cs = &configv1.ClusterSnapshot{}
		mustUnmarshal(t, path, cs)
	}
	return ts, cs
}

func mustUnmarshal(t *testing.T, path string, m proto.Message) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func goldenCases(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, ".cluster.json") {
			continue
		}
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	if len(names) == 0 {
		t.Fatal("no testdata/*.json inputs")
	}
	return names
}

// TestGolden compiles every testdata input and compares the dump of the
// table with testdata/NAME.golden. Run with -update to rewrite the golden
// files after a deliberate change, and review the diff.
func TestGolden(t *testing.T) {
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts, cs := readInputs(t, name)
			table, keys, err := build(ts, cs)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			checkInvariants(t, table)
			got := dump(table, keys)

			// Compile is build without the key entries: same table.
			table2, err := Compile(ts, cs)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if again := dump(table2, keys); again != got {
				t.Errorf("Compile and build disagree:\n%s", cmp.Diff(got, again))
			}

			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./compile -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
			}
		})
	}
}

// checkInvariants checks what the routing core relies on in every table.
func checkInvariants(t *testing.T, table *routing.Table) {
	t.Helper()
	for _, r := range table.Records {
		if len(r.Members) == 0 {
			t.Errorf("record %q has no members", r.Name)
		}
		if !r.Pool && (len(r.Members) != 1 || r.Members[0].Name != "primary") {
			t.Errorf("plain record %q: members are not exactly [primary]", r.Name)
		}
		for i, m := range r.Members {
			if m.Record != r {
				t.Errorf("member %s: Record does not point back to its record", m.ID)
			}
			if m.Index != i {
				t.Errorf("member %s: Index %d at position %d", m.ID, m.Index, i)
			}
			if m.ID != r.ID+"/"+m.Name {
				t.Errorf("member %s: ID is not <record id>/<name>", m.ID)
			}
			if table.Member(m.ID) != m {
				t.Errorf("member %s: Table.Member does not find it", m.ID)
			}
			if m.Weight < 1 || m.Order < 1 || m.Account == "" {
				t.Errorf("member %s: weight %d, order %d, account %q", m.ID, m.Weight, m.Order, m.Account)
			}
		}
	}
}

// TestCompileSharesNoMemory changes every map and slice of the inputs after
// compiling and checks that the table did not change with them.
func TestCompileSharesNoMemory(t *testing.T) {
	t.Parallel()
	for _, name := range goldenCases(t) {
		ts, cs := readInputs(t, name)
		table, keys, err := build(ts, cs)
		if err != nil {
			t.Fatal(err)
		}
		before := dump(table, keys)
		scribble(ts.GetDataRules().GetRequiredTags())
		for _, k := range ts.GetApiKeys() {
			scribbleList(k.GetRegions())
			scribbleList(k.GetAllowedModels())
		}
		recs := ts.GetRecords()
		for _, mr := range cs.GetManagedRecords() {
			recs = append(recs, mr.GetRecord())
		}
		for _, r := range recs {
			scribble(r.GetTags())
			scribble(r.GetRateLimitHeaders())
			scribbleList(r.GetAllowedRegions())
			scribbleList(r.GetAuth().GetScopes())
			for _, p := range r.GetPrices() {
				*p.InputMicros = 42
			}
			for _, m := range r.GetMembers() {
				scribble(m.GetTags())
				scribble(m.GetModelMap())
				scribbleList(m.GetModels())
				scribbleList(m.GetAuth().GetScopes())
			}
		}
		if diff := cmp.Diff(before, dump(table, keys)); diff != "" {
			t.Errorf("%s: the table changed with its input (-before +after):\n%s", name, diff)
		}
	}
}

func scribble(m map[string]string) {
	if m == nil {
		return
	}
	for k := range m {
		m[k] = "scribbled"
	}
	m["scribbled"] = "scribbled"
}

func scribbleList(l []string) {
	for i := range l {
		l[i] = "scribbled"
	}
}

// TestRecovery checks the defaults of ROUTING.md and the one field where a
// set zero differs from an absent one.
func TestRecovery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		recovery string
		want     routing.Recovery
	}{
		{"absent", ``, routing.DefaultRecovery()},
		{"empty", `"recovery": {},`, routing.DefaultRecovery()},
		{"zeros take defaults", `"recovery": {"max_attempts": 0, "call_deadline": "0s", "cooldown_base": "0s", "cooldown_max": "0s"},`, routing.DefaultRecovery()},
		{"set zero attempt deadline disables it", `"recovery": {"attempt_deadline": "0s"},`, func() routing.Recovery {
			r := routing.DefaultRecovery()
			r.AttemptDeadline = 0
			return r
		}()},
		{"every field", `"recovery": {"max_attempts": 3, "call_deadline": "90s", "attempt_deadline": "30s", "cooldown_base": "2s", "cooldown_max": "60s", "max_wait": "1.5s"},`, routing.Recovery{
			MaxAttempts: 3, CallDeadline: 90e9, AttemptDeadline: 30e9, CooldownBase: 2e9, CooldownMax: 60e9, MaxWait: 1.5e9,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := parseTenant(t, `{"tenant": {"id": "t", "name": "t"}, "records": [{"id": "r", "name": "r", `+tt.recovery+`
				"wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://api.example.com", "models": [{"name": "m"}]}]}`)
			table, err := Compile(ts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, table.Records[0].Recovery); diff != "" {
				t.Errorf("recovery (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDisabledTenantRevokesKeys checks that a disabled tenant's table finds
// none of its keys.
func TestDisabledTenantRevokesKeys(t *testing.T) {
	t.Parallel()
	ts := parseTenant(t, `{"tenant": {"id": "t", "name": "t", "disabled": true},
		"api_keys": [{"id": "k", "name": "k", "sha256": "X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0="}]}`)
	table, keys, err := build(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || table.Key(keys[0].SHA256) != nil {
		t.Errorf("a disabled tenant's key is still found")
	}
}

func TestNilSnapshot(t *testing.T) {
	t.Parallel()
	table, err := Compile(nil, nil)
	if table != nil || !errors.Is(err, ErrInvalid) || len(Problems(err)) != 1 {
		t.Errorf("Compile(nil, nil) = %v, %v; want nil and one problem", table, err)
	}
}

func parseTenant(t *testing.T, s string) *configv1.TenantSnapshot {
	t.Helper()
	ts := &configv1.TenantSnapshot{}
	if err := protojson.Unmarshal([]byte(s), ts); err != nil {
		t.Fatalf("test input: %v\n%s", err, s)
	}
	return ts
}

// TestValidation checks that a bad snapshot is refused whole and that the
// error lists every problem, in snapshot order, each naming its object and
// field.
func TestValidation(t *testing.T) {
	t.Parallel()
	const tenant = `"tenant": {"id": "t-acme", "name": "acme"}`
	var many []string
	for i := range 17 {
		many = append(many, fmt.Sprintf(`{"name": "m%d", "base_url": "https://m%d.example.com"}`, i, i))
	}
	tests := []struct {
		name    string
		tenant  string
		cluster string
		want    []string // substrings of each problem, in order
	}{
		{
			name: "three different problems",
			tenant: `{` + tenant + `,
				"api_keys": [{"id": "k", "name": "ci", "sha256": "AAAA"}],
				"records": [
					{"id": "r1", "name": "Bad Name", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com", "models": [{"name": "m"}]},
					{"id": "r2", "name": "nourl", "wire_format": "WIRE_FORMAT_OPENAI", "models": [{"name": "m"}]}
				]}`,
			want: []string{
				`record "Bad Name": name: "Bad Name" must be 1-64 of [a-z0-9_-]`,
				`record "nourl": base_url: missing: a plain record needs a base_url`,
				`key "ci": sha256: must be 32 bytes, got 3`,
			},
		},
		{
			name: "pool shape",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "p", "wire_format": "WIRE_FORMAT_OPENAI",
				"base_url": "https://p.example.com", "models": [{"name": "m"}],
				"members": [
					{"name": "a", "base_url": "http://api.example.com"},
					{"name": "a", "base_url": "https://b.example.com", "weight": 20000},
					{"name": "A", "base_url": ""}
				]}]}`,
			want: []string{
				`record "p": base_url: a pool must not have a base_url`,
				`record "p" member "a": base_url: must be https`,
				`record "p" member "a": name: another member of the record is named "a"`,
				`record "p" member "a": weight: must be 1-10000, got 20000`,
				`record "p" member "A": name: "A" must be 1-64 of [a-z0-9_-]`,
				`record "p" member "A": base_url: missing: every pool member needs its own base_url`,
			},
		},
		{
			name: "too many members",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "big", "wire_format": "WIRE_FORMAT_OPENAI",
				"models": [{"name": "m"}], "members": [` + strings.Join(many, ",") + `]}]}`,
			want: []string{`record "big": members: a pool has at most 16 members, got 17`},
		},
		{
			name: "sigv4 and oauth2 need their fields",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "br", "wire_format": "WIRE_FORMAT_BEDROCK",
				"auth": {"kind": "AUTH_KIND_SIGV4", "aws_service": "bedrock"},
				"models": [{"name": "m"}],
				"members": [
					{"name": "inherits", "base_url": "https://bedrock-runtime.us-east-1.amazonaws.com"},
					{"name": "own", "base_url": "https://gw.example.com", "auth": {"kind": "AUTH_KIND_OAUTH2", "token_url": "http://idp.example.com/token"}}
				]}]}`,
			want: []string{
				`record "br" member "own": auth.client_id: missing: oauth2 auth needs it (R-SEC-3)`,
				`record "br" member "own": auth.client_secret_secret: missing`,
				`record "br" member "own": auth.token_url: must be https`,
				`record "br": auth.access_key_secret: missing: sigv4 auth needs it (R-SEC-3)`,
				`record "br": auth.aws_region: missing`,
			},
		},
		{
			name: "record auth unused by any member is not checked",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "br", "wire_format": "WIRE_FORMAT_BEDROCK",
				"auth": {"kind": "AUTH_KIND_SIGV4"},
				"models": [{"name": "m"}],
				"members": [{"name": "own", "base_url": "https://bedrock-runtime.us-east-1.amazonaws.com",
					"auth": {"kind": "AUTH_KIND_SIGV4", "aws_service": "bedrock", "aws_region": "us-east-1", "access_key_secret": "aws"}}]}]}`,
		},
		{
			name: "prices",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "an", "wire_format": "WIRE_FORMAT_ANTHROPIC",
				"models": [{"name": "claude-x"}, {"name": "claude-y"}],
				"prices": [{"model": "claude-x", "input_micros": "3000000", "output_micros": "-1", "cache_read_micros": "300000", "cache_write_micros": "3750000"}],
				"members": [{"name": "a", "base_url": "https://api.anthropic.com", "prices": [
					{"model": "claude-z", "input_micros": "1"},
					{"model": "claude-y", "input_micros": "1000000", "output_micros": "5000000", "cache_read_micros": "100000"}
				]}]}]}`,
			want: []string{
				`record "an": prices[0].output_micros: must not be negative, got -1`,
				`record "an" member "a": prices[0].model: "claude-z" is not a model of the record`,
				`record "an" member "a": prices[1]: a member price must be whole when the record has no price for "claude-y": it lacks cache write, and those tokens would cost nothing (R-COST-4)`,
			},
		},
		{
			name: "partial record price",
			tenant: `{` + tenant + `, "records": [
				{"id": "r1", "name": "plain", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://api.openai.com/v1",
				 "models": [{"name": "gpt-x"}], "prices": [{"model": "gpt-x", "input_micros": "1", "output_micros": "2"}]},
				{"id": "r2", "name": "pool", "wire_format": "WIRE_FORMAT_BEDROCK",
				 "models": [{"name": "c"}], "prices": [{"model": "c", "input_micros": "1", "output_micros": "2", "cache_read_micros": "0"}],
				 "members": [
					{"name": "gives", "base_url": "https://a.example.com", "prices": [{"model": "c", "cache_write_micros": "5"}]},
					{"name": "gives-none", "base_url": "https://b.example.com"},
					{"name": "serves-other", "base_url": "https://c.example.com", "models": ["c"], "prices": [{"model": "c", "input_micros": "7"}]}
				 ]}]}`,
			want: []string{
				`record "plain": prices[0]: the price of "gpt-x" lacks cache read: a price must be whole`,
				`record "pool" member "gives-none": prices: the price of "c" lacks cache write: the record's price lacks it and the member gives none`,
				`record "pool" member "serves-other": prices[0]: the price of "c" lacks cache write even with the record's price for it`,
			},
		},
		{
			name: "models and model map",
			tenant: `{` + tenant + `, "records": [
				{"id": "r0", "name": "plain", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com",
				 "models": [{"name": "gpt-x"}], "model_map": {"gpt-x": "dep-1", "gpt-q": "dep-2"}},
				{"id": "r", "name": "az", "wire_format": "WIRE_FORMAT_OPENAI",
				"models": [{"name": "gpt-x"}], "model_map": {"gpt-x": "dep"},
				"members": [{"name": "a", "base_url": "https://a.example.com", "models": ["gpt-y"],
					"model_map": {"gpt-z": "foo", "gpt-x": ""}, "prices": [{"model": "gpt-x", "input_micros": "1", "output_micros": "1", "cache_read_micros": "1"}]}]}]}`,
			want: []string{
				`record "plain": model_map[gpt-q]: key "gpt-q" is not a model of the record`,
				`record "az": model_map: is for plain records: each member of a pool has its own model_map`,
				`record "az" member "a": models[0]: "gpt-y" is not a model of the record`,
				`record "az" member "a": model_map[gpt-x]: "gpt-x" maps to "", which is not a model name`,
				`record "az" member "a": model_map[gpt-z]: key "gpt-z" is not a model of the record`,
				`record "az" member "a": prices[0].model: "gpt-x" is not among the member's models`,
			},
		},
		{
			name: "api-key auth needs a key secret",
			tenant: `{` + tenant + `, "records": [
				{"id": "r1", "name": "plain", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://api.openai.com/v1",
				 "auth": {"kind": "AUTH_KIND_API_KEY"}, "models": [{"name": "m"}]},
				{"id": "r2", "name": "pool", "wire_format": "WIRE_FORMAT_OPENAI", "auth": {"header": "api-key"}, "models": [{"name": "m"}],
				 "members": [
					{"name": "with", "base_url": "https://a.example.com", "key_secret": "k"},
					{"name": "without", "base_url": "https://b.example.com"}
				 ]},
				{"id": "r3", "name": "open", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://open.example.com", "models": [{"name": "m"}]}
			]}`,
			want: []string{
				`record "plain": key_secret: missing: api-key auth needs a key secret`,
				`record "pool" member "without": key_secret: missing: api-key auth needs a key secret`,
			},
		},
		{
			name: "regions",
			tenant: `{` + tenant + `, "data_rules": {"allowed_regions": ["eu-*", "eu west"]},
				"api_keys": [{"id": "k", "name": "k", "sha256": "X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0=", "regions": [""]}],
				"records": [
					{"id": "r1", "name": "plain", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://api.openai.com/v1",
					 "region": "us east", "models": [{"name": "m"}]},
					{"id": "r2", "name": "pool", "wire_format": "WIRE_FORMAT_OPENAI", "allowed_regions": ["[a-z]*"], "models": [{"name": "m"}],
					 "members": [{"name": "a", "base_url": "https://a.example.com", "region": "x/y"}, {"name": "b", "base_url": "https://b.example.com", "region": ""}]}
				]}`,
			want: []string{
				`data_rules: allowed_regions[1]: "eu west" must be a region name or a glob`,
				`record "plain": region: "us east" must be 1-64 of [A-Za-z0-9_-]`,
				`record "pool": allowed_regions[0]: "[a-z]*" must be a region name or a glob`,
				`record "pool" member "a": region: "x/y" must be 1-64 of [A-Za-z0-9_-]`,
				`key "k": regions[0]: "" must be a region name or a glob`,
			},
		},
		{
			name: "duplicates",
			tenant: `{` + tenant + `,
				"api_keys": [
					{"id": "k1", "name": "ci", "sha256": "X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0="},
					{"id": "k2", "name": "ci", "sha256": "X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0="}
				],
				"records": [
					{"id": "r1", "name": "dup", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://a.example.com", "models": [{"name": "m"}]},
					{"id": "r1", "name": "dup", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://b.example.com", "models": [{"name": "m"}]}
				]}`,
			cluster: `{"managed_records": [
				{"tenant_ids": ["t-acme"], "record": {"id": "s1", "name": "shared", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://s.example.com", "models": [{"name": "m"}]}},
				{"tenant_ids": ["t-acme"], "record": {"id": "s2", "name": "shared", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://s.example.com", "models": [{"name": "m"}]}},
				{"tenant_ids": ["t-acme"], "record": {"id": "s3", "name": "dup", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://s.example.com", "models": [{"name": "m"}]}}
			]}`,
			want: []string{
				`record "dup": id: the same id as record "dup"`,
				`record "dup": name: another record has the same name`,
				`managed record "shared": name: another record has the same name`,
				`key "ci": name: another key has the same name`,
				`key "ci": sha256: the same hash as key "ci"`,
			},
		},
		{
			name: "wire format and models",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "x", "base_url": "https://x.example.com",
				"models": [{"name": "m", "kind": 7}, {"name": ""}, {"name": "n"}, {"name": "n"}]}]}`,
			want: []string{
				`record "x": wire_format: missing: must be openai, anthropic, bedrock or gemini`,
				`record "x": models[0].kind: model "m" has unknown kind 7`,
				`record "x": models[1].name: "" is not a model name`,
				`record "x": models[3].name: model "n" is listed twice`,
			},
		},
		{
			name: "own record claims to be managed or another tenant's",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "x", "managed": true, "tenant_id": "t-other",
				"wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com", "models": [{"name": "m"}]}]}`,
			want: []string{
				`record "x": managed: a tenant's own record cannot be managed`,
				`record "x": tenant_id: belongs to tenant "t-other"`,
			},
		},
		{
			name: "recovery, output cap, limits, budgets",
			tenant: `{` + tenant + `, "records": [
				{"id": "r1", "name": "neg", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com", "models": [{"name": "m"}],
				 "recovery": {"cooldown_base": "-1s"}, "default_max_output": "-1", "limits": {"rpm": "-1"}},
				{"id": "r2", "name": "above", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com", "models": [{"name": "m"}],
				 "recovery": {"cooldown_base": "7200s"}}
				],
				"budgets": [{"name": "b", "limit_nanos": "-5"}]}`,
			want: []string{
				`record "neg": limits.rpm: must not be negative, got -1`,
				`record "neg": recovery.cooldown_base: must not be negative, got -1s`,
				`record "neg": default_max_output: must not be negative, got -1`,
				`record "above": recovery.cooldown_base: 2h0m0s is above cooldown_max 1h0m0s`,
				`budget "b": id: missing`,
				`budget "b": limit_nanos: must not be negative, got -5`,
			},
		},
		{
			name: "auth fields",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "x", "wire_format": "WIRE_FORMAT_OPENAI",
				"auth": {"kind": "AUTH_KIND_API_KEY", "header": "bad header", "aws_region": "us-east-1"}, "key_secret": "k",
				"models": [{"name": "m"}],
				"members": [{"name": "a", "base_url": "https://a.example.com", "auth": {"access_key_secret": "aws"}}]}]}`,
			want: []string{
				`record "x" member "a": auth: sets fields but no kind or header`,
				`record "x": auth.aws_region: set, but the auth kind is api_key`,
				`record "x": auth.header: "bad header" is not a header name`,
			},
		},
		{
			name: "R-SEC-2 urls",
			tenant: `{` + tenant + `, "records": [
				{"id": "r1", "name": "ftp", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "ftp://x.example.com", "models": [{"name": "m"}]},
				{"id": "r2", "name": "creds", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://user:pw@x.example.com", "models": [{"name": "m"}]},
				{"id": "r3", "name": "relative", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "/v1", "models": [{"name": "m"}]},
				{"id": "r4", "name": "evil", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://localhost.evil.com", "models": [{"name": "m"}]},
				{"id": "r5", "name": "private", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://10.0.0.1:8000", "models": [{"name": "m"}]},
				{"id": "r11", "name": "metadata", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://169.254.169.254/latest", "models": [{"name": "m"}]},
				{"id": "r12", "name": "unspecified", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://0.0.0.0", "models": [{"name": "m"}]},
				{"id": "r13", "name": "ula", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://[fd00:ec2::254]", "models": [{"name": "m"}]},
				{"id": "r14", "name": "public-ip", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://203.0.113.7/v1", "models": [{"name": "m"}]},
				{"id": "r6", "name": "unparsable", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://%zz", "models": [{"name": "m"}]},
				{"id": "r7", "name": "loopback4", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://127.0.0.5:8000/v1", "models": [{"name": "m"}]},
				{"id": "r8", "name": "loopback6", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://[::1]:8000/v1", "models": [{"name": "m"}]},
				{"id": "r9", "name": "localhost", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://LOCALHOST:8000/v1", "models": [{"name": "m"}]},
				{"id": "r10", "name": "internal", "internal": true, "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://gpu.internal:8000/v1", "models": [{"name": "m"}]},
				{"id": "r15", "name": "empty-query", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://127.0.0.1:9090/metrics?x=", "models": [{"name": "m"}]},
				{"id": "r16", "name": "query", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com/v1?a=b", "models": [{"name": "m"}]},
				{"id": "r17", "name": "empty-fragment", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com/v1#", "models": [{"name": "m"}]},
				{"id": "r18", "name": "alibaba", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://100.100.100.200/", "models": [{"name": "m"}]},
				{"id": "r19", "name": "broadcast", "managed": false, "internal": true, "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://255.255.255.255/", "models": [{"name": "m"}]}
			]}`,
			want: []string{
				`record "ftp": base_url: must be an absolute http(s) URL, got scheme "ftp"`,
				`record "creds": base_url: must not carry credentials`,
				`record "relative": base_url: must be an absolute http(s) URL, got scheme ""`,
				`record "evil": base_url: must be https`,
				`record "private": base_url: must be https`,
				`record "private": base_url: must not be this address on a tenant's record: private address`,
				`record "metadata": base_url: must not be this address on a tenant's record: link-local address (cloud metadata)`,
				`record "unspecified": base_url: must not be this address on a tenant's record: unspecified address`,
				`record "ula": base_url: must not be this address on a tenant's record: private address`,
				`record "unparsable": base_url: does not parse as a URL`,
				`record "empty-query": base_url: must not have a query string`,
				`record "query": base_url: must not have a query string`,
				`record "empty-fragment": base_url: must not have a fragment`,
				`record "alibaba": base_url: must not be this address on a tenant's record: shared address space`,
				`record "broadcast": base_url: must not be this address on any record: broadcast address`,
			},
		},
		{
			name: "rate limit headers",
			tenant: `{` + tenant + `, "records": [{"id": "r", "name": "x", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com",
				"models": [{"name": "m"}],
				"rate_limit_headers": {"tokens-limit": "x-tok", "foo-limit": "x-foo", "requests-reset": "bad header"}}]}`,
			want: []string{
				`record "x": rate_limit_headers[foo-limit]: unknown key "foo-limit"`,
				`record "x": rate_limit_headers[requests-reset]: "bad header" is not a header name`,
			},
		},
		{
			name:   "no tenant",
			tenant: `{"version": "1"}`,
			want:   []string{`tenant: missing`},
		},
		{
			name:   "tenant fields",
			tenant: `{"tenant": {"name": "Acme Corp"}}`,
			want:   []string{`tenant: id: missing`, `tenant: name: "Acme Corp" must be 1-64 of [a-z0-9_-]`},
		},
		{
			name:   "a managed record not shared with the tenant is not checked",
			tenant: `{` + tenant + `}`,
			cluster: `{"managed_records": [
				{"tenant_ids": ["t-other"], "record": {"id": "s1", "name": "Broken Record"}},
				{"tenant_ids": ["t-acme"], "record": {"id": "s2", "name": "http-ok", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "http://10.0.0.1:8000", "models": [{"name": "m"}]}}
			]}`,
		},
		{
			name:    "a managed record shared with the tenant is checked",
			tenant:  `{` + tenant + `}`,
			cluster: `{"managed_records": [{"tenant_ids": ["t-acme"], "record": {"id": "s1", "name": "Broken", "wire_format": "WIRE_FORMAT_OPENAI", "base_url": "https://x.example.com"}}, {"tenant_ids": ["t-acme"]}]}`,
			want: []string{
				`managed record "Broken": name: "Broken" must be 1-64 of [a-z0-9_-]`,
				`managed record "Broken": models: missing: a record serves at least one model`,
				`managed record #1: record: missing`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := parseTenant(t, tt.tenant)
			var cs *configv1.ClusterSnapshot
			if tt.cluster != "" {
				cs = &configv1.ClusterSnapshot{}
				if err := protojson.Unmarshal([]byte(tt.cluster), cs); err != nil {
					t.Fatalf("test cluster input: %v", err)
				}
			}
			table, err := Compile(ts, cs)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want no problem, got %v", err)
				}
				if table == nil {
					t.Fatal("nil table without an error")
				}
				return
			}
			if table != nil {
				t.Errorf("a refused snapshot still gave a table")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			got := Problems(err)
			var msgs []string
			for _, p := range got {
				msgs = append(msgs, p.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(msgs, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(msgs[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, msgs[i], w)
				}
				if !strings.Contains(err.Error(), msgs[i]) {
					t.Errorf("the error's text does not list problem %d", i)
				}
			}
			if want := fmt.Sprintf("%d problem", len(tt.want)); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err.Error(), want)
			}
		})
	}
}
