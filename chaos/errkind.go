package chaos

import (
	"context"
	"errors"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/repo"
	"gorm.io/gorm"
)

// errKind names an error's kind for the report's "errors by kind".
func errKind(err error) string {
	switch {
	case errors.Is(err, repo.ErrNotFound):
		return "not_found"
	case errors.Is(err, gorm.ErrDuplicatedKey) || strings.Contains(err.Error(), "SQLSTATE 23505"):
		return "duplicate"
	case errors.Is(err, repo.ErrAfterCommit):
		return "after_commit"
	case errors.Is(err, cacheaside.ErrOverloaded):
		return "overloaded"
	case errors.Is(err, cacheaside.ErrWaitTimeout):
		return "wait_timeout"
	case errors.Is(err, lock.ErrLockNotHeld):
		return "lock_not_held"
	case errors.Is(err, lock.ErrNotObtained):
		return "not_obtained"
	case errors.Is(err, limit.ErrBreakerOpen):
		return "breaker_open"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case strings.Contains(err.Error(), "SQLSTATE 57P01"): // admin_shutdown: pg_terminate_backend
		return "terminated"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), "conn closed"):
		return "conn"
	}
	return "other"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// definite reports whether a write that failed with err certainly did
// not happen.
func definite(err error) bool {
	switch errKind(err) {
	case "not_found", "duplicate":
		return true
	}
	return false
}

// applied says whether a repository write that returned err happened.
func applied(err error) Applied {
	switch {
	case err == nil:
		return Yes
	case definite(err):
		return No
	case errors.Is(err, repo.ErrAfterCommit):
		return Committed
	default:
		return Maybe
	}
}

// counts is a histogram of names.
type counts map[string]int

// minus returns c less o, name by name, without the names left at 0.
func (c counts) minus(o counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (c counts) String() string {
	if len(c) == 0 {
		return "-"
	}
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(c[n]))
	}
	return b.String()
}
