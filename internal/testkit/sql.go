package testkit

import (
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"
)

// SQLCounter records every statement GORM runs on a database, through
// callbacks registered after each processor's main step. Its methods are
// safe for concurrent use.
type SQLCounter struct {
	mu    sync.Mutex
	stmts []string
	vars  int // bound parameters of all statements
}

// CountSQL returns a counter of the statements db runs from now on.
func CountSQL(tb testing.TB, db *gorm.DB) *SQLCounter {
	tb.Helper()
	c := &SQLCounter{}
	rec := func(tx *gorm.DB) {
		if tx.Error != nil && tx.Statement.SQL.Len() == 0 || tx.DryRun {
			return // failed before it was built, or a subquery built, not run
		}
		c.mu.Lock()
		c.stmts = append(c.stmts, tx.Statement.SQL.String())
		c.vars += len(tx.Statement.Vars)
		c.mu.Unlock()
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("testkit:count", rec),
		cb.Query().After("gorm:query").Register("testkit:count", rec),
		cb.Update().After("gorm:update").Register("testkit:count", rec),
		cb.Delete().After("gorm:delete").Register("testkit:count", rec),
		cb.Row().After("gorm:row").Register("testkit:count", rec),
		cb.Raw().After("gorm:raw").Register("testkit:count", rec),
	} {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// Reset forgets the statements recorded so far.
func (c *SQLCounter) Reset() {
	c.mu.Lock()
	c.stmts = nil
	c.vars = 0
	c.mu.Unlock()
}

// Params returns how many bound parameters the statements had: for loads
// by id, how many ids reached the database.
func (c *SQLCounter) Params() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vars
}

// Count returns how many statements ran that start with prefix ("" for
// all), e.g. "SELECT".
func (c *SQLCounter) Count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.stmts {
		if strings.HasPrefix(strings.TrimSpace(s), prefix) {
			n++
		}
	}
	return n
}

// All returns the statements recorded, oldest first.
func (c *SQLCounter) All() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.stmts...)
}
