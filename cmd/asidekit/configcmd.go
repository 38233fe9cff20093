package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/asidekit/asidekit/repo/configstore"
)

// runConfig is config get KEY | set KEY VALUE | list, on the
// repo/configstore settings of the config's scope.
func runConfig(r *runner, args []string) error {
	fs := r.flags("config")
	pos, err := r.parse(fs, args, "get KEY | set KEY VALUE | list", 1, 3)
	if err != nil {
		return err
	}
	want := map[string]int{"get": 2, "set": 3, "list": 1}
	if n, ok := want[pos[0]]; !ok || n != len(pos) {
		return usageErr("usage: asidekit config get KEY | set KEY VALUE | list")
	}
	cfg, err := r.config()
	if err != nil {
		return err
	}
	if pos[0] == "set" {
		if err := r.confirm(fmt.Sprintf("set %s to %q in scope %s", pos[1], pos[2], cfg.ConfigScope)); err != nil {
			return err
		}
	}
	rdb, err := r.b.Redis(r.ctx)
	if err != nil {
		return err
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	st, err := configstore.New(rdb, db, &configstore.Options{Namespace: cfg.Namespace, Scope: cfg.ConfigScope})
	if err != nil {
		return usageErr("%v", err)
	}
	switch pos[0] {
	case "get":
		v, err := st.Get(r.ctx, pos[1])
		if errors.Is(err, configstore.ErrNotFound) {
			_ = r.output(map[string]any{"key": pos[1], "found": false}, func(w io.Writer) {
				fmt.Fprintf(w, "%s: not set in scope %s\n", pos[1], cfg.ConfigScope)
			})
			return errProblem
		}
		if err != nil {
			return configErr(err)
		}
		return r.output(map[string]any{"key": pos[1], "found": true, "value": v}, func(w io.Writer) {
			fmt.Fprintln(w, v)
		})
	case "set":
		if err := st.Set(r.ctx, pos[1], pos[2]); err != nil {
			return configErr(err)
		}
		return r.output(map[string]any{"key": pos[1], "value": pos[2]}, func(w io.Writer) {
			fmt.Fprintf(w, "set %s in scope %s\n", pos[1], cfg.ConfigScope)
		})
	}
	all, err := st.All(r.ctx)
	if err != nil {
		return configErr(err)
	}
	return r.output(all, func(w io.Writer) {
		ks := make([]string, 0, len(all))
		for k := range all {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for _, k := range ks {
			fmt.Fprintf(w, "%s=%s\n", k, all[k])
		}
	})
}

// configErr classifies a configstore error.
func configErr(err error) error {
	if errors.Is(err, configstore.ErrInvalid) {
		return usageErr("%v", err)
	}
	if isUnreachable(err) {
		return unreachable("PostgreSQL or Redis", err)
	}
	return err
}
