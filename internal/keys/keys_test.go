package keys

import (
	"errors"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"42":         "42",
		"user@x":     "user@x",
		"a:b":        "a%3Ab",
		"{tag}":      "%7Btag%7D",
		"a b\nc":     "a%20b%0Ac",
		"100%":       "100%25",
		"héllo":      "héllo",
		"k*?[]\\x":   "k%2A%3F%5B%5D%5Cx",
		"\x00\x1f!~": "%00%1F!~",
		"del\x7f":    "del%7F",
	} {
		got, err := Escape(in)
		if err != nil || got != want {
			t.Errorf("Escape(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestEscape_rejects(t *testing.T) {
	for _, in := range []string{"", strings.Repeat("x", MaxPart+1)} {
		if _, err := Escape(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Escape(%d bytes) err = %v, want ErrInvalid", len(in), err)
		}
	}
}

func FuzzEscape_injective(f *testing.F) {
	f.Add("a:b", "a%3Ab")
	f.Add("{", "%7B")
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, errA := Escape(a)
		eb, errB := Escape(b)
		if errA != nil || errB != nil {
			return
		}
		if a != b && ea == eb {
			t.Fatalf("Escape(%q) == Escape(%q) == %q", a, b, ea)
		}
		if strings.ContainsAny(ea, ":{} \n") {
			t.Fatalf("Escape(%q) = %q keeps a special byte", a, ea)
		}
	})
}

func TestNamespace(t *testing.T) {
	if ns, err := Namespace(""); err != nil || ns != DefaultNamespace {
		t.Fatalf("Namespace(\"\") = %q, %v", ns, err)
	}
	if _, err := Namespace("a:b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Namespace(a:b) err = %v", err)
	}
}

func TestCopyOptions(t *testing.T) {
	type options struct {
		Namespace string
		N         int
	}
	field := func(o *options) *string { return &o.Namespace }
	errBad := errors.New("pkg: invalid argument")

	c, err := CopyOptions(nil, field, errBad)
	if err != nil || c != (options{Namespace: DefaultNamespace}) {
		t.Errorf("nil: %+v, %v", c, err)
	}
	in := &options{N: 3}
	c, err = CopyOptions(in, field, errBad)
	if err != nil || c != (options{Namespace: DefaultNamespace, N: 3}) || *in != (options{N: 3}) {
		t.Errorf("copy: %+v, %v; caller's %+v", c, err, *in)
	}
	c, err = CopyOptions(&options{Namespace: "svc"}, field, errBad)
	if err != nil || c.Namespace != "svc" {
		t.Errorf("svc: %+v, %v", c, err)
	}
	_, err = CopyOptions(&options{Namespace: "a:b"}, field, errBad)
	if !errors.Is(err, errBad) || !errors.Is(err, ErrInvalid) {
		t.Errorf("a:b: %v, want errBad and ErrInvalid", err)
	}
}
