package repo

import (
	"fmt"

	"github.com/asidekit/asidekit/cacheaside"
)

// ErrClosed is returned, before anything is written, by every write of a
// repository whose Cache is closed (asidekit's Kit.Close closes it): the
// write could no longer keep its upkeep, as a failed invalidation would
// never be retried. Reads go on, from Redis and the database. It is
// cacheaside.ErrClosed.
var ErrClosed = cacheaside.ErrClosed

// open returns ErrClosed, naming the write op, once the Cache is closed.
func (c *core[T, ID]) open(op string) error {
	if c.cache.Closed() {
		return fmt.Errorf("repo: %s: %s: %w", c.name, op, ErrClosed)
	}
	return nil
}
