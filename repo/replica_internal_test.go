package repo

import "testing"

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]uint64{"0/0": 0, "0/16B3748": 0x16B3748, "1A/FF": 0x1A000000FF, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		if got, err := parseLSN(in); err != nil || got != want {
			t.Errorf("parseLSN(%q) = %X, %v; want %X", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "12", "x/1", "1/100000000"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) accepted", bad)
		}
	}
}
