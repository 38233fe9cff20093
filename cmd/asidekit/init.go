package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// runInit writes a config file from the database's tables: every table of
// the current schema with a single-column primary key becomes an entity
// named after it (repo's default name), with its single-column unique
// indexes as GetBy columns. Bloom filter sizing is not in the database:
// add "filter" to the entities whose repository has one.
//
// The servers are written as given, a ${VAR} kept as it is (expanded to
// connect): a DSN that comes from $DATABASE_URL (no -dsn, or -dsn equal to
// it) is written "${DATABASE_URL}", so that no password lands in the file.
// The CDC slot is -slot, else the one repo/cdc slot found on the database
// (see findSlot); init says which it took.
func runInit(r *runner, args []string) error {
	fl := r.flags("init")
	ns := fl.String("namespace", "ak", "the service's key `NAMESPACE`")
	slot := fl.String("slot", "", "the service's repo/cdc `SLOT` (default: the one found on the database)")
	outPath := fl.String("o", "", "the `FILE` to write (default: the -config file, asidekit.json)")
	force := fl.Bool("force", false, "overwrite an existing file")
	const usage = "-dsn DSN (-redis ADDR | -redis-cluster ADDRS) [-namespace NS] [-slot SLOT] [-o FILE]"
	if _, err := r.parse(fl, args, usage, 0, 0); err != nil {
		return err
	}
	dsn := r.dsn
	if env := os.Getenv("DATABASE_URL"); env != "" && (dsn == "" || dsn == env) {
		dsn = "${DATABASE_URL}"
	}
	if dsn == "" || (r.redis == "") == (r.cluster == "") {
		return usageErr("usage: asidekit init " + usage + " ($DATABASE_URL stands for a missing -dsn)")
	}
	cfg := &Config{DSN: dsn, Redis: r.redis, Namespace: *ns}
	if r.cluster != "" {
		cfg.RedisCluster = strings.Split(r.cluster, ",")
	}
	conn := *cfg // expanded, to connect; cfg is written as given
	conn.RedisCluster = slices.Clone(cfg.RedisCluster)
	conn.expand()
	if conn.DSN == "" {
		return usageErr("init: -dsn %s is empty once expanded", cfg.DSN)
	}
	r.b.cfg = &conn
	if _, err := r.b.Redis(r.ctx); err != nil {
		return err
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	var pks []struct{ Table, Col string }
	if err := db.WithContext(r.ctx).Raw(`SELECT c.relname AS table, a.attname AS col
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
		WHERE i.indisprimary AND i.indnkeyatts = 1 AND n.nspname = current_schema()
		AND c.relname NOT LIKE 'asidekit\_%' ORDER BY 1`).Scan(&pks).Error; err != nil {
		return fmt.Errorf("init: read tables: %w", err)
	}
	var uks []struct{ Table, Col string }
	if err := db.WithContext(r.ctx).Raw(`SELECT DISTINCT c.relname AS table, a.attname AS col
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
		WHERE i.indisunique AND NOT i.indisprimary AND i.indnkeyatts = 1
		AND i.indpred IS NULL AND i.indexprs IS NULL AND n.nspname = current_schema()
		ORDER BY 1, 2`).Scan(&uks).Error; err != nil {
		return fmt.Errorf("init: read unique indexes: %w", err)
	}
	for _, pk := range pks {
		e := EntityConfig{Name: pk.Table, Table: pk.Table, Key: pk.Col}
		for _, uk := range uks {
			if uk.Table == pk.Table {
				e.Unique = append(e.Unique, uk.Col)
			}
		}
		cfg.Entities = append(cfg.Entities, e)
	}
	took, err := findSlot(r.ctx, db, *slot)
	if err != nil {
		return err
	}
	cfg.CDCSlot = took.name
	path := *outPath
	if path == "" {
		path = r.configPath
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return usageErr("%s exists (-force overwrites it)", path)
	}
	if err != nil {
		return usageErr("%v", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if r.jsonOut {
		fmt.Fprintf(r.stderr, "asidekit: cdc slot %s (%s)\n", took.name, took.why)
	}
	if !strings.Contains(cfg.DSN, "${") && hasPassword(cfg.DSN) {
		fmt.Fprintf(r.stderr, "asidekit: %s holds the DSN's password: pass -dsn '${DATABASE_URL}' to keep it out\n", path)
	}
	return r.output(cfg.Entities, func(w io.Writer) {
		fmt.Fprintf(w, "wrote %s: %d entities, cdc slot %s (%s)\n", path, len(cfg.Entities), took.name, took.why)
		for _, e := range cfg.Entities {
			fmt.Fprintf(w, "  %-20s key %s, unique [%s]\n", e.Name, e.Key, strings.Join(e.Unique, " "))
		}
	})
}
