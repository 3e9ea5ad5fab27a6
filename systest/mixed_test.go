package systest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestMixedPoolFromCLI is the README's mixed-pool walk-through on the whole
// system (ROUTING.md §11): a pool made with the weir CLI of an Anthropic
// member in order 1 and a Gemini member in order 2, both fake deployments
// on their own processes; an OpenAI-format caller and an Anthropic-format
// caller each get answers in their own format from either member (R-FMT-2,
// R-FMT-4), the Anthropic member's 429 moves calls to the Gemini member,
// and the call records name the member's format and that the call was
// translated (R-FMT-6).
func TestMixedPoolFromCLI(t *testing.T) {
	s := startSystem(t, "mixed", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const pool, model = "mixed-pool", "claude-mixed"
	type fake struct{ name, flavor, key, addr, control string }
	fakes := []fake{
		{name: "claude", flavor: "anthropic", key: "sk-mixed-claude", addr: s.spare[0], control: freeAddr(t)},
		{name: "gemini", flavor: "gemini", key: "mixed-gemini-key", addr: s.spare[1], control: freeAddr(t)},
	}
	for _, f := range fakes {
		p := s.newProc("fake-mixed-"+f.name, bins.fakeprovider, "-addr", f.addr, "-control", f.control, "-flavor", f.flavor,
			"-rpm", "100000", "-itpm", "100000000", "-otpm", "100000000")
		p.env = append(p.env, "FAKEPROVIDER_API_KEY="+f.key)
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		s.waitUp(ctx, p, "fake provider", func() error { return dial(f.control) })
	}
	s.mustWeir(ctx, strings.NewReader(fakes[0].key), "secret", "set", "mixed-claude-key", "--host", "127.0.0.1")
	s.mustWeir(ctx, strings.NewReader(fakes[1].key), "secret", "set", "mixed-gemini-key", "--host", "127.0.0.1")
	// The Gemini member goes in first: a snapshot in which the edge serves
	// the order-1 member then holds both members (snapshots are whole).
	s.mustWeir(ctx, nil, "provider", "pool", "add", pool, "gemini", "--preset", "gemini", "--models", model,
		"--base-url", "http://"+fakes[1].addr+"/v1beta", "--key-secret", "mixed-gemini-key", "--order", "2", "--account", "gemini",
		"--model", model+"=gemini-2.5-flash", "--price", model+"=0.3,2.5,0.075", "--rpm", "600", "--rpd", "10000", "--day-zone", "America/Los_Angeles")
	s.mustWeir(ctx, nil, "provider", "pool", "add", pool, "claude", "--preset", "anthropic",
		"--base-url", "http://"+fakes[0].addr, "--key-secret", "mixed-claude-key", "--order", "1", "--account", "claude",
		"--price", model+"=3,15,0.3,3.75", "--max-in-flight", "50")

	show := s.mustWeir(ctx, nil, "provider", "show", pool)
	// The member table's FORMAT column names each member's own format.
	for _, want := range []string{`(?m)^\s*claude\s+anthropic\s`, `(?m)^\s*gemini\s+gemini\s`} {
		if !regexp.MustCompile(want).MatchString(show) {
			t.Errorf("weir provider show %s does not match %q:\n%s", pool, want, show)
		}
	}
	// Order 1 serves both callers while it is healthy; until the edge has
	// the snapshot with the second add, calls go to the Gemini member.
	calls, before := 0, 0 // before: calls the Gemini member answered before the claude add reached the edge
	err := waitFor(ctx, 30*time.Second, 50*time.Millisecond, func() error {
		if err := s.modelServed(http.DefaultClient, 0, model); err != nil {
			return err
		}
		calls++
		r := chat(ctx, http.DefaultClient, s.edgeU[0], s.key, model, false, calls, nil)
		if r.success && r.member == "gemini" {
			before++
		}
		if !r.success || r.member != "claude" {
			return fmt.Errorf("status %d member %q %v %s", r.status, r.member, r.err, r.body)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("R-FMT-2 OpenAI caller → anthropic member: %v", err)
	}
	if r := chat(ctx, http.DefaultClient, s.edgeU[0], s.key, model, true, 100, nil); !r.success || r.member != "claude" {
		t.Fatalf("R-FMT-2 OpenAI caller streamed → anthropic member: status %d member %q %v %s", r.status, r.member, r.err, r.body)
	}
	if member, text := anthropicCall(ctx, t, s.edgeU[0], s.key, model); member != "claude" || text == "" {
		t.Fatalf("R-FMT-1 Anthropic caller: member %q text %q", member, text)
	}

	// The Anthropic member refuses: the same calls reach the Gemini member
	// in the caller's format (R-FMT-4).
	setFault(t, fakes[0].control, "429:120s")
	if r := chat(ctx, http.DefaultClient, s.edgeU[0], s.key, model, false, 101, nil); !r.success || r.member != "gemini" {
		t.Fatalf("R-FMT-4 OpenAI caller after order 1's 429: status %d member %q %v %s", r.status, r.member, r.err, r.body)
	}
	if r := chat(ctx, http.DefaultClient, s.edgeU[0], s.key, model, true, 102, nil); !r.success || r.member != "gemini" {
		t.Fatalf("R-FMT-4 OpenAI caller streamed → gemini member: status %d member %q %v %s", r.status, r.member, r.err, r.body)
	}
	if member, text := anthropicCall(ctx, t, s.edgeU[0], s.key, model); member != "gemini" || text == "" {
		t.Fatalf("R-FMT-2 Anthropic caller → gemini member: member %q text %q", member, text)
	}

	// R-FMT-6: the records say which format served and that it was
	// translated.
	want := map[string]int{"claude/anthropic/true": 2, "claude/anthropic/false": 1, "gemini/gemini/true": 3 + before}
	err = waitFor(ctx, 30*time.Second, 100*time.Millisecond, func() error {
		got := map[string]int{}
		if err := s.query(ctx, func(c *pgx.Conn) error {
			rows, err := c.Query(ctx, `SELECT c.member_name, c.member_format, c.translated FROM calls c JOIN tenants t ON t.id = c.tenant_id
				WHERE t.name = 'mixed' AND c.record_name = $1 AND c.status = 200`, pool)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var member, format string
				var translated bool
				if err := rows.Scan(&member, &format, &translated); err != nil {
					return err
				}
				got[fmt.Sprintf("%s/%s/%t", member, format, translated)]++
			}
			return rows.Err()
		}); err != nil {
			return err
		}
		for k, n := range want {
			if got[k] != n {
				return fmt.Errorf("call records %v, want %v", got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// anthropicCall sends one Anthropic Messages call and returns the member
// that served it and the answer's text.
func anthropicCall(ctx context.Context, t *testing.T, base, key, model string) (member, text string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"max_tokens":32,"messages":[{"role":"user","content":"hello from the anthropic sdk"}]}`, model)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/messages: %d %s", resp.StatusCode, b)
	}
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &msg); err != nil || msg.Type != "message" || len(msg.Content) == 0 {
		t.Fatalf("/v1/messages answer is not an Anthropic message: %v %s", err, b)
	}
	return resp.Header.Get("X-Weir-Member"), msg.Content[0].Text
}
