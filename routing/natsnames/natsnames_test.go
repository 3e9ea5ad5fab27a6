package natsnames

import "testing"

func TestToken(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "_",
		"edge-1":             "edge-1",
		"ip-10-0-0-1.ec2":    "ip-10-0-0-1_ec2",
		"a b*c>d":            "a_b_c_d",
		"ünï":                "__n__", // bytes, not runes
		"4f1c2a9e-0b1d-4c3e": "4f1c2a9e-0b1d-4c3e",
	} {
		if got := Token(in); got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
	}
}
