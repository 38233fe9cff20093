package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo/cdc"
)

// slotChoice is the CDC slot init writes, and why.
type slotChoice struct{ name, why string }

// findSlot returns the CDC slot of the service: given, when -slot names
// one; else the one slot repo/cdc made on the database. repo/cdc's slots
// are logical, use the pgoutput plugin and have a publication of the same
// name (cdc.Options.Publication's default); a database with none keeps
// cdc.DefaultSlot, the name the service's Invalidator takes by default,
// and one with several is an error asking for -slot.
func findSlot(ctx context.Context, db *gorm.DB, given string) (slotChoice, error) {
	if given != "" {
		return slotChoice{given, "given by -slot"}, nil
	}
	var names []string
	if err := db.WithContext(ctx).Raw(`SELECT s.slot_name FROM pg_replication_slots s
		WHERE s.slot_type = 'logical' AND s.plugin = 'pgoutput' AND s.database = current_database()
		AND EXISTS (SELECT 1 FROM pg_publication p WHERE p.pubname = s.slot_name)
		ORDER BY 1`).Scan(&names).Error; err != nil {
		return slotChoice{}, fmt.Errorf("init: read replication slots: %w", err)
	}
	switch len(names) {
	case 0:
		return slotChoice{cdc.DefaultSlot, "no repo/cdc slot on the database yet: repo/cdc's default"}, nil
	case 1:
		return slotChoice{names[0], "the repo/cdc slot found on the database"}, nil
	}
	return slotChoice{}, usageErr("init: the database has %d repo/cdc slots (%s): name the service's with -slot", len(names), strings.Join(names, ", "))
}

// hasPassword reports whether dsn, a URL or key=value string, holds a
// password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		_, ok := u.User.Password()
		return ok
	}
	for _, f := range strings.Fields(dsn) {
		if strings.HasPrefix(f, "password=") {
			return true
		}
	}
	return false
}
