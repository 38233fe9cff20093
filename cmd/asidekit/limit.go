package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
)

// limitState is one algorithm's state under a key.
type limitState struct {
	Algorithm string            `json:"algorithm"`
	Key       string            `json:"key"`
	Type      string            `json:"type"`
	TTLMillis int64             `json:"ttl_ms"`
	Fields    map[string]string `json:"fields,omitempty"`
	Members   int64             `json:"members,omitempty"`
}

// runLimit is limit status KEY: what Redis holds for a rate limiter key,
// under every algorithm that has state for it (guard/limit.Peek).
func runLimit(r *runner, args []string) error {
	fs := r.flags("limit")
	pos, err := r.parse(fs, args, "status KEY", 2, 2)
	if err != nil {
		return err
	}
	if pos[0] != "status" {
		return usageErr("usage: asidekit limit status KEY")
	}
	cfg, err := r.config()
	if err != nil {
		return err
	}
	rdb, err := r.b.Redis(r.ctx)
	if err != nil {
		return err
	}
	states, err := limit.Peek(r.ctx, rdb, pos[1], &limit.Options{Namespace: cfg.Namespace})
	if err != nil {
		if errors.Is(err, limit.ErrInvalid) {
			return usageErr("%v", err)
		}
		return unreachable("Redis", err)
	}
	out := make([]limitState, len(states))
	for i, s := range states {
		out[i] = limitState{Algorithm: s.Algorithm, Key: s.Key, Type: s.Type, TTLMillis: s.TTL.Milliseconds(), Fields: s.Fields, Members: s.Members}
	}
	return r.output(out, func(w io.Writer) {
		if len(out) == 0 {
			fmt.Fprintf(w, "%s: no limiter state (no call counted, or its window passed)\n", pos[1])
		}
		for _, s := range out {
			ttl := "no expiry"
			if s.TTLMillis >= 0 {
				ttl = "resets in " + (time.Duration(s.TTLMillis) * time.Millisecond).String()
			}
			fmt.Fprintf(w, "%-5s %s  %s, %s", s.Algorithm, s.Key, s.Type, ttl)
			if s.Type == "zset" {
				fmt.Fprintf(w, ", %d member(s)", s.Members)
			}
			fields := make([]string, 0, len(s.Fields))
			for f := range s.Fields {
				fields = append(fields, f)
			}
			slices.Sort(fields)
			for _, f := range fields {
				if f == "" {
					fmt.Fprintf(w, ", value %s", s.Fields[f])
				} else {
					fmt.Fprintf(w, ", %s=%s", f, s.Fields[f])
				}
			}
			fmt.Fprintln(w)
		}
	})
}
