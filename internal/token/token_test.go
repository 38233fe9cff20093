package token

import "testing"

func TestNew_uniqueAndURLSafe(t *testing.T) {
	seen := make(map[string]bool)
	for i := 0; i < 10000; i++ {
		tok := New()
		if len(tok) != Len {
			t.Fatalf("token %q has %d bytes, want %d", tok, len(tok), Len)
		}
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("token %q holds %q", tok, c)
			}
		}
		if seen[tok] {
			t.Fatalf("token %q issued twice", tok)
		}
		seen[tok] = true
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		_ = New()
	}
}
