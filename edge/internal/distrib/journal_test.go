package distrib

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"weir.dev/routing/natsnames"
)

func readAll(t *testing.T, j *journal, from pos) ([]string, pos) {
	t.Helper()
	var out []string
	p := from
	for {
		b, next, ok, err := j.read(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out, p
		}
		out = append(out, string(b))
		p = next
	}
}

// Frames come back in order across segments; acked segments are deleted;
// a torn tail is cut on open; the acked position survives a close.
func TestJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j, start, err := openJournal(dir, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := j.append(fmt.Appendf(nil, "record-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readAll(t, j, start)
	if len(got) != 20 || got[0] != "record-00" || got[19] != "record-19" {
		t.Fatalf("read back %q", got)
	}
	segs := countSegments(t, j)
	if segs < 4 {
		t.Fatalf("%d segments for 20 frames of 64-byte segments", segs)
	}
	// Ack the first 10: the segments wholly before are deleted.
	p := start
	for range 10 {
		_, p, _, _ = j.read(p)
	}
	j.ackTo(p)
	if n := countSegments(t, j); n >= segs {
		t.Fatalf("ack deleted no segment (%d → %d)", segs, n)
	}
	if err := j.close(p); err != nil {
		t.Fatal(err)
	}

	// A torn frame at the end of the last segment is cut on open.
	ents, _ := os.ReadDir(dir)
	var last string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == segSuffix {
			last = e.Name()
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, last), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 50, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	j2, start2, err := openJournal(dir, 64)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = readAll(t, j2, start2)
	if len(got) != 10 || got[0] != "record-10" || got[9] != "record-19" {
		t.Fatalf("after reopen from the acked position: %q", got)
	}
	if err := j2.append([]byte("record-20")); err != nil {
		t.Fatal(err)
	}
	got, end2 := readAll(t, j2, start2)
	if len(got) != 11 || got[10] != "record-20" {
		t.Fatalf("after an append: %q", got)
	}
	// Everything acked: close leaves an empty journal.
	if err := j2.close(end2); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == segSuffix || e.Name() == ackedFile {
			t.Fatalf("%s left after everything was acked", e.Name())
		}
	}
}

func TestEntryRoundTrip(t *testing.T) {
	t.Parallel()
	id, tenant, body, err := decodeEntry(encodeEntry("call_1", "t-1", []byte("body")))
	if err != nil || id != "call_1" || tenant != "t-1" || string(body) != "body" {
		t.Fatalf("%q %q %q %v", id, tenant, body, err)
	}
	if _, _, _, err := decodeEntry([]byte{200}); err == nil {
		t.Fatal("garbage decoded")
	}
}

func TestTokenAndEdgeKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "_", "abc-1_Z": "abc-1_Z", "host.example.com": "host_example_com", "a b*>": "a_b__"} {
		if got := natsnames.Token(in); got != want {
			t.Errorf("natsnames.Token(%q) = %q, want %q", in, got, want)
		}
	}
	hexKey := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	k1, err := ParseEdgeKey(hexKey)
	if err != nil || len(k1) != 32 || k1[31] != 0x1f {
		t.Fatalf("hex: %v", err)
	}
	k2, err := ParseEdgeKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("base64: %v", err)
	}
	if _, err := ParseEdgeKey("c2hvcnQ="); err == nil {
		t.Fatal("a short key was accepted")
	}
}
