package repo

import (
	"context"
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
)

// lookup is one unique key of the model (one or more columns): its
// value → primary key mapping is cached in its own entity.
type lookup[ID comparable] struct {
	name   string // entity name: "<name>.by.<col>[+<col>…]"
	fields []*schema.Field
	ent    *cacheaside.Entity[ID]
	// filter holds the key's values, for GetBy (it is the entity's
	// Policy.Filter) and InsertIfAbsent; nil without Options.Filter, and
	// for a key of several columns that is not InsertIfAbsent's.
	filter *bloom.Filter
}

// initLookups finds the model's unique keys, opens their entities, and
// picks InsertIfAbsent's key.
func (c *core[T, ID]) initLookups(cache *cacheaside.Cache, o Options) error {
	var sets [][]*schema.Field
	for _, idx := range c.sch.ParseIndexes() {
		if idx.Class != "UNIQUE" || idx.Where != "" { // a partial index is not a key
			continue
		}
		var fs []*schema.Field
		for _, f := range idx.Fields {
			if f.Field == nil || f.Expression != "" {
				fs = nil
				break
			}
			fs = append(fs, f.Field)
		}
		if len(fs) > 0 {
			sets = append(sets, fs)
		}
	}
	for _, f := range c.sch.Fields {
		if f.Unique && !f.PrimaryKey && f.DBName != "" {
			sets = append(sets, []*schema.Field{f})
		}
	}
	var want []*schema.Field // Options.UniqueKey's fields
	if len(o.UniqueKey) > 0 {
		for _, col := range o.UniqueKey {
			f := c.sch.LookUpField(col)
			if f == nil || f.DBName == "" {
				return fmt.Errorf("%w: UniqueKey: model %s has no column %q", ErrInvalid, c.sch.Name, col)
			}
			want = append(want, f)
		}
		// First, so that its entity's key uses the caller's column order;
		// it may be a unique index that GORM's tags do not declare.
		sets = append([][]*schema.Field{want}, sets...)
	}
	for _, fs := range sets {
		if slices.ContainsFunc(c.lookups, func(l *lookup[ID]) bool { return sameFields(l.fields, fs) }) {
			continue
		}
		names := make([]string, len(fs))
		for i, f := range fs {
			names[i] = f.DBName
		}
		c.lookups = append(c.lookups, &lookup[ID]{name: c.name + ".by." + strings.Join(names, "+"), fields: fs})
	}

	switch {
	case want != nil:
		c.uniq = c.lookups[0]
	case len(c.lookups) == 1:
		c.uniq = c.lookups[0]
	case len(c.lookups) == 0:
		c.uniqErr = fmt.Errorf("%w: model %s has no unique index besides its primary key; set Options.UniqueKey", ErrNoUniqueKey, c.sch.Name)
	default:
		c.uniqErr = fmt.Errorf("%w: model %s has %d unique indexes; set Options.UniqueKey to choose one", ErrNoUniqueKey, c.sch.Name, len(c.lookups))
	}
	for _, l := range c.lookups {
		pol := o.Policy
		pol.Filter = nil // the primary-key filter knows nothing of these values
		if err := c.initLookupFilter(l, o); err != nil {
			return err
		}
		if l.filter != nil {
			pol.Filter = l.filter
		}
		var err error
		if l.ent, err = cacheaside.NewEntity[ID](cache, l.name, pol); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return nil
}

func sameFields(a, b []*schema.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for _, f := range a {
		if !slices.Contains(b, f) {
			return false
		}
	}
	return true
}

// key returns the cache id of row's values of the lookup's columns; ok is
// false when one of them is NULL (such a row has no mapping).
func (l *lookup[ID]) key(ctx context.Context, row reflect.Value) (key string, ok bool, err error) {
	if len(l.fields) == 1 {
		v, _ := l.fields[0].ValueOf(ctx, row)
		return valueKey(v)
	}
	// Several columns: each value length-prefixed, so that no two value
	// tuples give the same key.
	var b strings.Builder
	for _, f := range l.fields {
		v, _ := f.ValueOf(ctx, row)
		s, ok, err := valueKey(v)
		if !ok || err != nil {
			return "", ok, err
		}
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String(), true, nil
}

// cacheable reports whether key can be a cache id of the mapping entity. A
// longer value is never cached (GetBy refuses it), so a write has no
// mapping of it to invalidate.
func (l *lookup[ID]) cacheable(key string) bool {
	_, err := l.ent.Key(key)
	return err == nil
}

// eq is the condition "the (single) column equals v".
func (l *lookup[ID]) eq(v any) clause.Expression {
	return clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: l.fields[0].DBName}, Value: v}
}

// where returns the condition "the lookup's columns equal row's values".
func (l *lookup[ID]) where(ctx context.Context, row reflect.Value) clause.Expression {
	eqs := make([]clause.Expression, len(l.fields))
	for i, f := range l.fields {
		v, _ := f.ValueOf(ctx, row)
		eqs[i] = clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: f.DBName}, Value: v}
	}
	return clause.And(eqs...)
}

// deref follows rv's pointers to the value they point to; ok is false
// at a nil pointer (NULL).
func deref(rv reflect.Value) (_ reflect.Value, ok bool) {
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return rv, false
		}
		rv = rv.Elem()
	}
	return rv, true
}

// valueKey renders a column value as text for a cache id: integers in base
// 10 and strings as they are, whatever their named type, times in UTC
// (RFC 3339), then encoding.TextMarshaler and fmt.Stringer. ok is false
// for NULL (a nil pointer).
func valueKey(v any) (key string, ok bool, err error) {
	rv, ok := deref(reflect.ValueOf(v))
	if !ok {
		return "", false, nil
	}
	switch rv.Kind() {
	case reflect.Invalid:
		return "", false, nil
	case reflect.String:
		return rv.String(), true, checkText(rv.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true, nil
	case reflect.Bool:
		return strconv.FormatBool(rv.Bool()), true, nil
	}
	switch x := rv.Interface().(type) {
	case []byte:
		return string(x), x != nil, nil
	case time.Time:
		// One instant, one key, whatever its zone: a caller's local time,
		// a load's, the log's decoded at the server's TimeZone.
		return x.UTC().Format(time.RFC3339Nano), true, nil
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return "", false, fmt.Errorf("%w: %w", ErrInvalidID, err)
		}
		return string(b), true, checkText(string(b))
	case fmt.Stringer:
		return x.String(), true, checkText(x.String())
	}
	return "", false, fmt.Errorf("%w: cannot use a %T as a key value", ErrInvalidID, v)
}
