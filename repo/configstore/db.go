package configstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/schema"
)

var table = schema.Config{}.TableName()

// maxRowsPerStatement keeps an upsert under PostgreSQL's 65535 bind
// parameters (four per row).
const maxRowsPerStatement = 1000

// load reads the scope's rows, tombstones included: all of them when keys
// is nil, else those of keys. It is one query.
func (s *Store) load(ctx context.Context, keys []string) (map[string]entry, error) {
	var rows []schema.Config
	q := s.db.WithContext(ctx).Where(`"namespace" = ?`, s.scope)
	if keys != nil {
		q = q.Where(`"key" IN ?`, keys)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("configstore: read %s: %w", table, err)
	}
	out := make(map[string]entry, len(rows))
	for _, r := range rows {
		e := entry{version: r.Version, deleted: r.Value == nil}
		if r.Value != nil {
			e.value = *r.Value
		}
		out[r.Key] = e
	}
	return out, nil
}

type versionRow struct {
	Key     string
	Version int64
}

// upsert writes values (keys sorted, so that two transactions lock rows in
// the same order) in one transaction, each key's version one above its
// previous one (1 for a new key), and returns the new versions.
func (s *Store) upsert(ctx context.Context, sorted []string, values map[string]string) (map[string]int64, error) {
	now := time.Now().UTC()
	versions := make(map[string]int64, len(sorted))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for start := 0; start < len(sorted); start += maxRowsPerStatement {
			chunk := sorted[start:min(start+maxRowsPerStatement, len(sorted))]
			var b strings.Builder
			args := make([]any, 0, 4*len(chunk))
			b.WriteString(`INSERT INTO ` + table + ` ("namespace", "key", "value", "version", "updated_at") VALUES `)
			for i, k := range chunk {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, ?, 1, ?)")
				args = append(args, s.scope, k, values[k], now)
			}
			b.WriteString(` ON CONFLICT ("namespace", "key") DO UPDATE SET "value" = excluded."value", ` +
				`"version" = ` + table + `."version" + 1, "updated_at" = excluded."updated_at" ` +
				`RETURNING "key", "version"`)
			var rows []versionRow
			if err := tx.Raw(b.String(), args...).Scan(&rows).Error; err != nil {
				return err
			}
			for _, r := range rows {
				versions[r.Key] = r.Version
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("configstore: write %s: %w", table, err)
	}
	if len(versions) != len(sorted) {
		return nil, fmt.Errorf("configstore: write %s: %d versions returned for %d keys", table, len(versions), len(sorted))
	}
	return versions, nil
}

// tombstone marks key deleted (a NULL value, the version bumped) and
// returns the new version, or 0 if the key had no value.
func (s *Store) tombstone(ctx context.Context, key string) (int64, error) {
	var rows []versionRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return tx.Raw(`UPDATE `+table+` SET "value" = NULL, "version" = "version" + 1, "updated_at" = ? `+
			`WHERE "namespace" = ? AND "key" = ? AND "value" IS NOT NULL RETURNING "key", "version"`,
			time.Now().UTC(), s.scope, key).Scan(&rows).Error
	})
	if err != nil {
		return 0, fmt.Errorf("configstore: delete from %s: %w", table, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Version, nil
}
