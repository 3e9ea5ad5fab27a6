package routing

import (
	"slices"
	"testing"
	"time"
)

func names(recs []*Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

func TestRecordChoice(t *testing.T) {
	t.Parallel()
	p := func(in, out Micros) mopt { return price(in, out, in/10, in, "m") }
	cheap := rec("cheap", WireOpenAI, []string{"m"}, []*Member{mem("primary", p(1_000_000, 2_000_000))})
	dear := rec("dear", WireOpenAI, []string{"m"}, []*Member{mem("primary", p(3_000_000, 1_000_000))})
	unpriced := rec("unpriced", WireOpenAI, []string{"m"}, []*Member{mem("primary")})
	prio := rec("prio", WireOpenAI, []string{"m"}, []*Member{mem("primary", p(1_000_000, 2_000_000))}, priority(-1))
	older := rec("older", WireOpenAI, []string{"m"}, []*Member{mem("primary", p(1_000_000, 2_000_000))}, created(-time.Hour))
	anth := rec("anth", WireAnthropic, []string{"claude"}, []*Member{mem("primary")})
	emb := rec("emb", WireOpenAI, nil, []*Member{mem("primary")}, embeddings("embed-1"))
	man := rec("man", WireOpenAI, []string{"m", "only-managed"}, []*Member{mem("primary", p(1, 1))}, managed())
	slashy := rec("hf", WireOpenAI, []string{"meta-llama/Llama-3"}, []*Member{mem("primary")})

	tests := []struct {
		name     string
		recs     []*Record
		req      Request
		key      *Key
		want     []string
		wantCode string
		wantStat int
	}{
		{name: "R-MODEL-1 record/model pins the record", recs: []*Record{cheap, dear}, req: chat("dear/m"), want: []string{"dear"}},
		{name: "R-MODEL-1 model name with a slash that is no record", recs: []*Record{slashy}, req: chat("meta-llama/Llama-3"), want: []string{"hf"}},
		{name: "R-MODEL-1 every record serving the model is a candidate", recs: []*Record{dear, cheap}, req: chat("m"), want: []string{"cheap", "dear"}},
		{name: "R-MODEL-2 no record serves the model", recs: []*Record{cheap}, req: chat("nope"), wantStat: 404, wantCode: CodeModelNotAvailable},
		{name: "R-MODEL-2 R-FMT-2 messages endpoint on an openai record (translated)", recs: []*Record{cheap}, req: Request{Endpoint: EndpointMessages, Model: "m"}, want: []string{"cheap"}},
		{name: "R-MODEL-2 R-FMT-2 chat endpoint on an anthropic record (translated)", recs: []*Record{anth}, req: chat("claude"), want: []string{"anth"}},
		{name: "R-MODEL-2 R-FMT-7 embeddings model on an anthropic record", recs: []*Record{{ID: "ae", Name: "ae", Wire: WireAnthropic, Models: map[string]ModelKind{"embed-1": KindEmbeddings}, Members: []*Member{{Name: "primary", Weight: 1, Order: 1}}}}, req: Request{Endpoint: EndpointEmbeddings, Model: "embed-1"}, wantStat: 400, wantCode: CodeWrongEndpoint},
		{name: "R-MODEL-2 messages endpoint on an anthropic record", recs: []*Record{anth}, req: Request{Endpoint: EndpointMessages, Model: "claude"}, want: []string{"anth"}},
		{name: "R-MODEL-2 embeddings model through chat", recs: []*Record{emb}, req: chat("embed-1"), wantStat: 400, wantCode: CodeWrongEndpoint},
		{name: "R-MODEL-2 embeddings model through embeddings", recs: []*Record{emb}, req: Request{Endpoint: EndpointEmbeddings, Model: "embed-1"}, want: []string{"emb"}},
		{name: "R-MODEL-2 model not in key's allowed models", recs: []*Record{cheap}, req: chat("m"), key: &Key{AllowedModels: map[string]bool{"other": true}}, wantStat: 403, wantCode: CodeModelNotAllowed},
		{name: "R-MODEL-2 endpoint is checked before the key", recs: []*Record{emb}, req: chat("embed-1"), key: &Key{AllowedModels: map[string]bool{"other": true}}, wantStat: 400, wantCode: CodeWrongEndpoint},
		{name: "R-MODEL-2 record not in key's allowed records", recs: []*Record{cheap}, req: chat("m"), key: &Key{AllowedRecords: map[string]bool{"dear": true}}, wantStat: 403, wantCode: CodeProviderNotAllowed},
		{name: "R-MODEL-2 key's allowed records narrow candidates", recs: []*Record{cheap, dear}, req: chat("m"), key: &Key{AllowedRecords: map[string]bool{"dear": true}}, want: []string{"dear"}},
		{name: "R-MODEL-2 key regions refuse a record without members there", recs: []*Record{cheap}, req: chat("m"), key: &Key{Regions: []string{"eu-*"}}, wantStat: 403, wantCode: CodeProviderNotAllowed},
		{name: "R-MODEL-3 own record before managed, managed dropped", recs: []*Record{man, dear}, req: chat("m"), want: []string{"dear"}},
		{name: "R-MODEL-3 managed when no own record serves the model", recs: []*Record{man, dear}, req: chat("only-managed"), want: []string{"man"}},
		{name: "R-MODEL-4 priced before unpriced, cheaper first", recs: []*Record{unpriced, dear, cheap}, req: chat("m"), want: []string{"cheap", "dear", "unpriced"}},
		{name: "R-MODEL-4 priority breaks a price tie", recs: []*Record{cheap, prio}, req: chat("m"), want: []string{"prio", "cheap"}},
		{name: "R-MODEL-4 older record breaks a priority tie", recs: []*Record{cheap, older}, req: chat("m"), want: []string{"older", "cheap"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := table(DataRules{}, tc.recs...)
			req := tc.req
			req.Key = tc.key
			got, _, err := tb.Candidates(&req)
			if tc.wantCode != "" {
				if err == nil || err.Code != tc.wantCode || err.Status != tc.wantStat {
					t.Fatalf("got %v, %v; want %d %s", names(got), err, tc.wantStat, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !slices.Equal(names(got), tc.want) {
				t.Fatalf("candidates = %v, want %v", names(got), tc.want)
			}
		})
	}
}

func TestRecordChoiceIsDeterministic(t *testing.T) {
	t.Parallel()
	// R-MODEL-4: the same candidates in any input order give one order.
	var recs []*Record
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		recs = append(recs, rec(n, WireOpenAI, []string{"m"}, []*Member{mem("primary")}))
	}
	want := []string{"a", "b", "c", "d", "e"}
	for i := 0; i < 5; i++ {
		shuffled := slices.Clone(recs)
		r := newRand(uint64(i))
		for j := len(shuffled) - 1; j > 0; j-- {
			k := int(r.Float64() * float64(j+1))
			shuffled[j], shuffled[k] = shuffled[k], shuffled[j]
		}
		SortRecords(shuffled, "m")
		if got := names(shuffled); !slices.Equal(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestRecordFailover(t *testing.T) {
	t.Parallel()
	p := func(in Micros) mopt { return price(in, in, in/10, in, "m") }
	tests := []struct {
		name   string
		recs   func() []*Record
		script map[string]answer
		want   []string // record/member tried
		final  string
	}{
		{
			name: "R-MODEL-5 next record after the pool is cooling",
			recs: func() []*Record {
				return []*Record{rec("a", WireOpenAI, []string{"m"}, []*Member{mem("a1", p(1))}), rec("b", WireOpenAI, []string{"m"}, []*Member{mem("b1", p(2))})}
			},
			script: map[string]answer{"a1": rate429()},
			want:   []string{"a/a1", "b/b1"},
		},
		{
			name: "R-MODEL-5 no move after a key refusal (R-END-5 answer)",
			recs: func() []*Record {
				return []*Record{rec("a", WireOpenAI, []string{"m"}, []*Member{mem("a1", p(1))}), rec("b", WireOpenAI, []string{"m"}, []*Member{mem("b1", p(2))})}
			},
			script: map[string]answer{"a1": v(KindKeyRefused, 403)},
			want:   []string{"a/a1"},
			final:  "passthrough",
		},
		{
			name: "R-MODEL-5 at most 3 records per call",
			recs: func() []*Record {
				var rs []*Record
				for i, n := range []string{"a", "b", "c", "d"} {
					rs = append(rs, rec(n, WireOpenAI, []string{"m"}, []*Member{mem(n+"1", p(Micros(i+1)))}))
				}
				return rs
			},
			script: map[string]answer{"a1": rate429(), "b1": rate429(), "c1": rate429(), "d1": rate429()},
			want:   []string{"a/a1", "b/b1", "c/c1"},
			final:  CodePoolCooling,
		},
		{
			name: "R-MODEL-5 never from a priced record to an unpriced one",
			recs: func() []*Record {
				return []*Record{rec("a", WireOpenAI, []string{"m"}, []*Member{mem("a1", p(1))}), rec("free", WireOpenAI, []string{"m"}, []*Member{mem("f1")})}
			},
			script: map[string]answer{"a1": v(KindServerError, 503)},
			want:   []string{"a/a1"},
			final:  CodePoolCooling,
		},
		{
			name: "R-MODEL-5 never from BYOK to managed",
			recs: func() []*Record {
				return []*Record{rec("own", WireOpenAI, []string{"m"}, []*Member{mem("o1", p(2))}), rec("man", WireOpenAI, []string{"m"}, []*Member{mem("m1", p(1))}, managed())}
			},
			script: map[string]answer{"o1": v(KindTransport, 0)},
			want:   []string{"own/o1"},
			final:  CodeUpstreamUnreachable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := table(DataRules{}, tc.recs()...)
			c := begin(t, tb, NewStates(), chat("m"), 1)
			tried, act := drive(t, c, t0, tc.script)
			var got []string
			for _, a := range c.Attempts {
				if a.Sent {
					got = append(got, a.Member.Record.Name+"/"+a.Member.Name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("tried %v (%v), want %v", got, tried, tc.want)
			}
			if tc.final == "" {
				if act != ActDeliver {
					t.Fatalf("action %v, want deliver", act)
				}
				return
			}
			f := c.Final(t0)
			switch {
			case tc.final == "passthrough":
				if f.PassThrough < 0 {
					t.Fatalf("final %+v, want a pass-through", f)
				}
			case f.Err == nil || f.Err.Code != tc.final:
				t.Fatalf("final %+v, want %s", f, tc.final)
			}
		})
	}
}

func TestModelsListEachOnce(t *testing.T) {
	t.Parallel()
	// R-MODEL-6: GET /v1/models lists each model the key may call once.
	a := rec("a", WireOpenAI, []string{"m", "n"}, []*Member{mem("p")})
	b := rec("b", WireOpenAI, []string{"m", "x"}, []*Member{mem("p")})
	tb := table(DataRules{}, a, b)
	if got := tb.Models(&Key{}); !slices.Equal(got, []string{"m", "n", "x"}) {
		t.Fatalf("models %v", got)
	}
	if got := tb.Models(&Key{AllowedModels: map[string]bool{"m": true, "x": true}}); !slices.Equal(got, []string{"m", "x"}) {
		t.Fatalf("models with allowed list %v", got)
	}
	if got := tb.Models(&Key{AllowedRecords: map[string]bool{"a": true}}); !slices.Equal(got, []string{"m", "n"}) {
		t.Fatalf("models with allowed records %v", got)
	}
}
