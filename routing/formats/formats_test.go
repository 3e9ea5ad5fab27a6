package formats

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// enumTable is what the tests need of a table, whatever its enum type.
type enumTable interface {
	check(t *testing.T, ed protoreflect.EnumDescriptor)
}

func (tb Table[E]) check(t *testing.T, ed protoreflect.EnumDescriptor) {
	t.Helper()
	// Every value but the unspecified one has exactly one entry, and the
	// entries are in declaration order.
	var want []E
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		if n := vals.Get(i).Number(); n != 0 {
			want = append(want, E(n))
		}
	}
	var got []E
	for _, x := range tb.All() {
		got = append(got, x.Enum)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: entries are for %v, want one for each of %v in declaration order", ed.FullName(), got, want)
	}
	if _, ok := tb.ByEnum(0); ok {
		t.Errorf("%s: the unspecified value has an entry", ed.FullName())
	}

	// Every entry round-trips through each lookup, and its names are
	// spelled as the names of its siblings: lower case, the enum name's
	// words, '_' stored and '-' typed.
	stored, words := map[string]bool{}, map[string]bool{}
	for _, x := range tb.All() {
		if x.Stored == "" || x.Word == "" {
			t.Errorf("%s %v: empty name in %+v", ed.FullName(), x.Enum, x)
			continue
		}
		if stored[x.Stored] || words[x.Word] {
			t.Errorf("%s %v: name used twice in %+v", ed.FullName(), x.Enum, x)
		}
		stored[x.Stored], words[x.Word] = true, true
		if y, ok := tb.ByEnum(x.Enum); !ok || y != x {
			t.Errorf("ByEnum(%v) = %+v, %v; want %+v", x.Enum, y, ok, x)
		}
		if y, ok := tb.ByStored(x.Stored); !ok || y != x {
			t.Errorf("ByStored(%q) = %+v, %v; want %+v", x.Stored, y, ok, x)
		}
		if y, ok := tb.ByWord(x.Word); !ok || y != x {
			t.Errorf("ByWord(%q) = %+v, %v; want %+v", x.Word, y, ok, x)
		}
		if e, ok := tb.ParseStored(tb.Stored(x.Enum)); !ok || e != x.Enum {
			t.Errorf("ParseStored(Stored(%v)) = %v, %v", x.Enum, e, ok)
		}
		if e, ok := tb.ParseWord(tb.Word(x.Enum)); !ok || e != x.Enum {
			t.Errorf("ParseWord(Word(%v)) = %v, %v", x.Enum, e, ok)
		}
		name := string(ed.Values().ByNumber(protoreflect.EnumNumber(x.Enum)).Name())
		zero := string(ed.Values().ByNumber(0).Name())
		bare := strings.ToLower(strings.TrimPrefix(name, strings.TrimSuffix(zero, "UNSPECIFIED")))
		if x.Stored != bare || x.Word != strings.ReplaceAll(bare, "_", "-") {
			t.Errorf("%s: stored %q, word %q; want %q and %q", name, x.Stored, x.Word, bare, strings.ReplaceAll(bare, "_", "-"))
		}
	}

	// Nothing else is found.
	for _, s := range []string{"", "unspecified", "API_KEY", "OpenAI", "unknown"} {
		if _, ok := tb.ByStored(s); ok {
			t.Errorf("%s: ByStored(%q) found an entry", ed.FullName(), s)
		}
		if _, ok := tb.ByWord(s); ok {
			t.Errorf("%s: ByWord(%q) found an entry", ed.FullName(), s)
		}
	}
	if tb.Stored(E(1000)) != "" || tb.Word(E(1000)) != "" {
		t.Errorf("%s: a value this build does not know has a name", ed.FullName())
	}
}

func TestTablesCoverEveryEnumValue(t *testing.T) {
	for _, c := range []struct {
		tb enumTable
		ed protoreflect.EnumDescriptor
	}{
		{WireFormats, configv1.WireFormat(0).Descriptor()},
		{AuthKinds, configv1.AuthKind(0).Descriptor()},
	} {
		c.tb.check(t, c.ed)
	}
}

// The names are contracts (stored values, CLI flags, problem texts):
// changing one needs a migration and a CLI change, not just this table.
func TestNamesAreTheContract(t *testing.T) {
	if got, want := WireFormats.StoredNames(), []string{"openai", "anthropic", "bedrock", "gemini"}; !slices.Equal(got, want) {
		t.Errorf("wire formats stored as %q, want %q", got, want)
	}
	if got, want := AuthKinds.StoredNames(), []string{"api_key", "sigv4", "oauth2", "none", "google_service_account"}; !slices.Equal(got, want) {
		t.Errorf("auth kinds stored as %q, want %q", got, want)
	}
	if got, want := WireFormats.StoredChoices(), "openai, anthropic, bedrock or gemini"; got != want {
		t.Errorf("StoredChoices() = %q, want %q", got, want)
	}
	var words []string
	for _, x := range AuthKinds.All() {
		words = append(words, x.Word)
	}
	if want := []string{"api-key", "sigv4", "oauth2", "none", "google-service-account"}; !slices.Equal(words, want) {
		t.Errorf("auth kind words %q, want %q", words, want)
	}
}

func TestAllIsACopy(t *testing.T) {
	all := AuthKinds.All()
	all[0].Word = "changed"
	if AuthKinds.Word(configv1.AuthKind_AUTH_KIND_API_KEY) != "api-key" {
		t.Fatal("All let the table be changed")
	}
}
