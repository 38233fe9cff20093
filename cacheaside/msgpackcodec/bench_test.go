package msgpackcodec_test

import (
	"strings"
	"testing"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/cacheaside/msgpackcodec"
)

// BenchmarkUnmarshal decodes the same ≈4 KB record with asidekit's default
// JSON codec and with this one: the decode is what a cache hit of a large
// value spends its CPU on.
func BenchmarkUnmarshal(b *testing.B) {
	in := sample()
	in.Name = strings.Repeat("name ", 200)
	for i := range 60 {
		in.Tags = append(in.Tags, strings.Repeat("t", i%40+10))
	}
	for _, c := range []struct {
		name  string
		codec cacheaside.Codec
	}{{"json", cacheaside.JSON{}}, {"msgpack", msgpackcodec.Codec{}}} {
		data, err := c.codec.Marshal(in)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				var out record
				if err := c.codec.Unmarshal(data, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
