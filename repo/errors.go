package repo

import (
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sqlstate"
)

var (
	// ErrNotFound is returned (wrapped, with the entity and id) when a row
	// does not exist, now or as cached within NullTTL, or when the Bloom
	// filter rules the id out. errors.Is also matches it with
	// cacheaside.ErrNotFound and gorm.ErrRecordNotFound.
	ErrNotFound error = notFound{}

	// ErrAfterCommit is returned (joined with the cause), with
	// Options.AfterCommitErrors only, when the database write committed
	// but the cache or filter upkeep after it failed. The write is not
	// lost and must not be retried as if it were: the failed work is
	// retried in the background until Redis takes it (see
	// GetAfterCommitStats), and meanwhile a stale value may be served.
	ErrAfterCommit = errors.New("repo: committed, but the cache upkeep after the commit failed")

	// ErrInvalid is returned (wrapped, with the reason) for input the
	// repository cannot use: by New for a model or options (no
	// single-column primary key, an ID type that does not match it, an
	// unknown UniqueKey column), by the filter methods without
	// Options.Filter, and, as ErrInvalidID, for an unusable id.
	ErrInvalid = errors.New("repo: invalid argument")

	// ErrInvalidID is returned for an id that cannot become a cache key:
	// an empty string, one longer than 1024 bytes, or a TextMarshaler that
	// fails or gives empty text; and by Create for a zero primary key that
	// the database does not generate. Writes return it before touching the
	// database. It wraps ErrInvalid: errors.Is matches both.
	ErrInvalidID = fmt.Errorf("%w: id", ErrInvalid)

	// ErrNoUniqueKey is returned by InsertIfAbsent and GetBy when the model
	// has no usable unique key: no unique index over the named column for
	// GetBy, or no Options.UniqueKey (and not exactly one unique index) for
	// InsertIfAbsent.
	ErrNoUniqueKey = errors.New("repo: no such unique key")
)

// notFound is ErrNotFound's type: one value that errors.Is matches with the
// not-found sentinels of the two layers under the repository, so that code
// written against either keeps working.
type notFound struct{}

func (notFound) Error() string { return "repo: not found" }

func (notFound) Is(target error) bool {
	return target == cacheaside.ErrNotFound || target == gorm.ErrRecordNotFound
}

// ErrDuplicate is returned (wrapped, with the entity and key) when a write
// breaks a unique constraint: PostgreSQL's SQLSTATE 23505 or SQLite's
// UNIQUE/PRIMARY KEY constraint codes, whether or not the *gorm.DB was
// opened with gorm.Config{TranslateError: true}. errors.Is also matches it
// with gorm.ErrDuplicatedKey, and the driver's own error stays in the chain
// (errors.As with *pgconn.PgError still works).
var ErrDuplicate error = duplicate{}

type duplicate struct{}

func (duplicate) Error() string { return "repo: duplicate key" }

func (duplicate) Is(target error) bool { return target == gorm.ErrDuplicatedKey }

// SQLite's extended result codes for a broken unique constraint.
const (
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// dbErr classifies an error from a database write: a broken unique
// constraint becomes ErrDuplicate joined with the driver's error.
func dbErr(err error) error {
	if err == nil || errors.Is(err, ErrDuplicate) {
		return err
	}
	state, _ := sqlstate.Of(err)
	dup := errors.Is(err, gorm.ErrDuplicatedKey) || state == "23505"
	var lite interface{ Code() int } // modernc.org/sqlite's *Error
	if errors.As(err, &lite) && (lite.Code() == sqliteConstraintUnique || lite.Code() == sqliteConstraintPrimaryKey) {
		dup = true
	}
	if !dup {
		return err
	}
	return fmt.Errorf("%w: %w", ErrDuplicate, err)
}

// repoError is an error with the repository's context said once:
// "repo: <what>: <cause>", the cause's own "repo: " prefix dropped from the
// message (it stays in the chain for errors.Is and errors.As).
type repoError struct {
	msg string
	err error
}

func (e *repoError) Error() string { return e.msg }
func (e *repoError) Unwrap() error { return e.err }

func wrapErr(what string, err error) error {
	return &repoError{msg: "repo: " + what + ": " + strings.TrimPrefix(err.Error(), "repo: "), err: err}
}

// isDeadlock reports PostgreSQL's "deadlock detected".
func isDeadlock(err error) bool {
	state, _ := sqlstate.Of(err)
	return state == "40P01"
}
