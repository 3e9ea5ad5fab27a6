package console

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
	"weir.dev/web"
)

// The inputs a record form and a member form share: auth (spec.auth.*),
// prices (spec.prices[i].*, dollars per million tokens) and key=value
// lists (tags, model map, rate-limit headers). Every input is named after
// the request's proto field path, so that the API's problems land next to
// it.

// blankPriceRows is how many empty price rows a form offers.
const blankPriceRows = 2

// maxPriceRows bounds the price rows read from a form.
const maxPriceRows = 64

// authInputs are the auth inputs' names.
var authInputs = []string{
	"spec.auth.kind", "spec.auth.header", "spec.auth.aws_service", "spec.auth.aws_region", "spec.auth.access_key_secret",
	"spec.auth.token_url", "spec.auth.client_id", "spec.auth.client_secret_secret", "spec.auth.scopes",
}

// priceInputs are the price inputs' names for rows price rows.
func priceInputs(rows int) []string {
	out := []string{"spec.prices"}
	for i := range rows {
		for _, p := range []string{"model", "input_micros", "output_micros", "cache_read_micros", "cache_write_micros"} {
			out = append(out, fmt.Sprintf("spec.prices[%d].%s", i, p))
		}
	}
	return out
}

func authFormFrom(r *http.Request) web.AuthForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue("spec.auth." + k)) }
	return web.AuthForm{
		Kind: v("kind"), Header: v("header"), AWSService: v("aws_service"), AWSRegion: v("aws_region"),
		AccessKeySecret: v("access_key_secret"), TokenURL: v("token_url"), ClientID: v("client_id"),
		ClientSecretSecret: v("client_secret_secret"), Scopes: v("scopes"),
	}
}

// authOf is the Auth of the auth inputs; nil when all are empty (a member
// then inherits the record's auth; a record has none).
func authOf(a web.AuthForm, local *problemSet) *configv1.Auth {
	out := &configv1.Auth{
		Header: a.Header, AwsService: a.AWSService, AwsRegion: a.AWSRegion, AccessKeySecret: a.AccessKeySecret,
		TokenUrl: a.TokenURL, ClientId: a.ClientID, ClientSecretSecret: a.ClientSecretSecret,
		Scopes: strings.FieldsFunc(a.Scopes, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }),
	}
	if a.Kind != "" {
		if k, ok := formats.AuthKinds.ParseWord(a.Kind); ok {
			out.Kind = k
		} else {
			local.add("spec.auth.kind", "unknown auth kind")
		}
	}
	return authOrNil(out)
}

// authOrNil returns nil for an auth that sets nothing.
func authOrNil(a *configv1.Auth) *configv1.Auth {
	if a == nil || proto.Equal(a, &configv1.Auth{}) {
		return nil
	}
	return a
}

func authFormOf(a *configv1.Auth) web.AuthForm {
	if a == nil {
		return web.AuthForm{}
	}
	kind := formats.AuthKinds.Word(a.GetKind())
	return web.AuthForm{
		Kind: kind, Header: a.GetHeader(), AWSService: a.GetAwsService(), AWSRegion: a.GetAwsRegion(),
		AccessKeySecret: a.GetAccessKeySecret(), TokenURL: a.GetTokenUrl(), ClientID: a.GetClientId(),
		ClientSecretSecret: a.GetClientSecretSecret(), Scopes: strings.Join(a.GetScopes(), " "),
	}
}

// priceRowsFrom reads the submitted price rows: blank ones dropped, the
// rest renumbered (the form is re-rendered in that order, so that problems
// keep their rows).
func priceRowsFrom(r *http.Request) []web.PriceRow {
	var out []web.PriceRow
	for i := range maxPriceRows {
		v := func(k string) string {
			return strings.TrimSpace(r.PostFormValue(fmt.Sprintf("spec.prices[%d].%s", i, k)))
		}
		row := web.PriceRow{Model: v("model"), Input: v("input_micros"), Output: v("output_micros"),
			CacheRead: v("cache_read_micros"), CacheWrite: v("cache_write_micros")}
		if row != (web.PriceRow{}) {
			out = append(out, row)
		}
	}
	return out
}

// pricesOf converts price rows into prices in micro-dollars, exactly; a
// part left empty is not given (a member inherits it from the record).
func pricesOf(rows []web.PriceRow, local *problemSet) []*configv1.Price {
	var out []*configv1.Price
	for i, row := range rows {
		p := &configv1.Price{Model: row.Model}
		if row.Model == "" {
			local.add(fmt.Sprintf("spec.prices[%d].model", i), "name the model this price is for")
		}
		for _, part := range []struct {
			name, v string
			slot    **int64
		}{
			{"input_micros", row.Input, &p.InputMicros}, {"output_micros", row.Output, &p.OutputMicros},
			{"cache_read_micros", row.CacheRead, &p.CacheReadMicros}, {"cache_write_micros", row.CacheWrite, &p.CacheWriteMicros},
		} {
			if part.v == "" {
				continue
			}
			n, err := parseMicros(part.v)
			if err != nil {
				local.add(fmt.Sprintf("spec.prices[%d].%s", i, part.name), err.Error())
				continue
			}
			*part.slot = &n
		}
		out = append(out, p)
	}
	return out
}

// priceRowsOf shows prices as rows in dollars.
func priceRowsOf(ps []*configv1.Price) []web.PriceRow {
	var out []web.PriceRow
	for _, p := range ps {
		out = append(out, web.PriceRow{Model: p.GetModel(), Input: optMicrosText(p.InputMicros), Output: optMicrosText(p.OutputMicros),
			CacheRead: optMicrosText(p.CacheReadMicros), CacheWrite: optMicrosText(p.CacheWriteMicros)})
	}
	return out
}

// padPrices adds the blank rows a form offers.
func padPrices(rows []web.PriceRow) []web.PriceRow {
	for range blankPriceRows {
		rows = append(rows, web.PriceRow{})
	}
	return rows
}

func pricesEqual(a, b []*configv1.Price) bool {
	return slices.EqualFunc(a, b, func(x, y *configv1.Price) bool { return proto.Equal(x, y) })
}

// kvOf parses "key=value" lines (or comma-separated pairs); nil when
// empty. A line without "=" or a key given twice is a problem of field.
func kvOf(field, text string, local *problemSet) map[string]string {
	var out map[string]string
	for n, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			local.add(field, fmt.Sprintf("entry %d (%q): want key=value", n+1, line))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, dup := out[k]; dup {
			local.add(field, fmt.Sprintf("%q is given twice", k))
			continue
		}
		out[k] = v
	}
	return out
}

// kvText shows a map as sorted "key=value" lines.
func kvText(m map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, k+"="+m[k])
	}
	return strings.Join(lines, "\n")
}

var priceRowProblem = regexp.MustCompile(`^spec\.prices\[\d+\]$`)

// rowProblems moves the problems the API reports of a whole price row
// ("spec.prices[1]": a price that is not whole) and of the auth as a
// whole ("spec.auth") to the row's model input and the auth kind, so that
// they are shown next to an input and mark it invalid.
func rowProblems(p web.Problems) web.Problems {
	if len(p.Fields) == 0 {
		return p
	}
	out := web.Problems{Message: p.Message, List: p.List, Fields: map[string]string{}}
	for f, m := range p.Fields {
		switch {
		case priceRowProblem.MatchString(f):
			f += ".model"
		case f == "spec.auth":
			f = "spec.auth.kind"
		}
		if old, ok := out.Fields[f]; ok {
			out.Fields[f] = old + "; " + m
		} else {
			out.Fields[f] = m
		}
	}
	return out
}

// optBool reads a "", "yes" or "no" select.
func optBool(field, v string, local *problemSet) *bool {
	switch v {
	case "":
		return nil
	case "yes":
		return proto.Bool(true)
	case "no":
		return proto.Bool(false)
	}
	local.add(field, "choose yes or no")
	return nil
}

func optBoolText(b *bool) string {
	if b == nil {
		return ""
	}
	return yesNo(*b)
}

func optBoolEq(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func int32Of(local *problemSet, field, v string) int32 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		local.add(field, "must be a whole number")
		return 0
	}
	return int32(n)
}
