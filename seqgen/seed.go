package seqgen

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// MaxSerial returns a SeedFunc for tables older than the generator: it
// finds the highest serial of the day in column of table (serials that
// start with Day.Prefix, longest first so that widened ones count) and
// returns its counter, or 0 when the day has none. The counter part must be
// all digits.
func MaxSerial(table, column string) SeedFunc {
	return func(ctx context.Context, tx *gorm.DB, biz string, day Day) (int64, error) {
		col := clause.Column{Name: column}
		var serials []string
		err := tx.WithContext(ctx).Table(table).
			Where(clause.Expr{SQL: `? LIKE ? ESCAPE '\'`, Vars: []any{col, escapeLike(day.Prefix) + "%"}}).
			Order(clause.OrderBy{Expression: clause.Expr{SQL: "LENGTH(?) DESC, ? DESC", Vars: []any{col, col}}}).
			Limit(1).Pluck(column, &serials).Error
		if err != nil {
			return 0, fmt.Errorf("max serial of %s.%s: %w", table, column, err)
		}
		if len(serials) == 0 {
			return 0, nil
		}
		digits := strings.TrimPrefix(serials[0], day.Prefix)
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || v < 0 || digits[0] == '+' {
			return 0, fmt.Errorf("max serial of %s.%s: %q does not end in a counter", table, column, serials[0])
		}
		return v, nil
	}
}

// escapeLike escapes the LIKE wildcards of s with backslashes.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
