package chaos

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/asidekit/asidekit/cacheaside"
)

// Item is the row the repository workload reads and writes. Every write
// sets Version to a number larger than every version written to the row
// before it, so a version read tells which write it came from.
//
// Slug is a unique value derived from the id (slugOf), which no write
// changes: GetBy reads the row by it, through the repository's filtered
// unique lookup.
type Item struct {
	ID      int64  `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Slug    string `gorm:"size:32;not null;uniqueIndex" json:"slug"`
	Version int64  `gorm:"not null" json:"version"`
	Payload string `gorm:"not null" json:"payload"`
}

// TableName is the table of Item.
func (Item) TableName() string { return "chaos_items" }

// newItem is row id at version ver.
func newItem(id, ver int64) Item {
	return Item{ID: id, Slug: slugOf(id), Version: ver, Payload: "v" + strconv.FormatInt(ver, 10)}
}

// slugOf is the slug of row id; idOfSlug reverses it.
func slugOf(id int64) string { return "item-" + strconv.FormatInt(id, 10) }

func idOfSlug(slug string) (int64, error) {
	s, ok := strings.CutPrefix(slug, "item-")
	if !ok {
		return 0, fmt.Errorf("chaos: %q is not a slug", slug)
	}
	return strconv.ParseInt(s, 10, 64)
}

// fenceRow is the resource the lock protects: a write is accepted when
// its fence is above the stored one, or equal with the same token.
type fenceRow struct {
	ID      int64  `gorm:"primaryKey;autoIncrement:false"`
	Fence   int64  `gorm:"not null"`
	Token   string `gorm:"not null"`
	Counter int64  `gorm:"not null"`
}

func (fenceRow) TableName() string { return "chaos_fence" }

// strategies are the cacheaside strategies the workload covers, one entity
// each over the same table, on ids of their own.
var strategies = []cacheaside.Strategy{
	cacheaside.None, cacheaside.SingleFlight, cacheaside.Mutex,
	cacheaside.AsyncRefresh, cacheaside.EarlyRefresh,
}

// hotStrategies are checked for loads per expiry (None makes no promise).
var hotStrategies = strategies[1:]

func entityName(prefix string, s cacheaside.Strategy) string {
	return prefix + "_" + strings.ToLower(s.String())
}

// itemID is the id of key j of strategy si; hotID the hot row of si.
func itemID(si, j int) int64 { return int64(si*1000 + j + 1) }
func hotID(si int) int64     { return int64(9000 + si) }

// strategyOf is the index of the strategy that owns id.
func strategyOf(id int64) int {
	if id >= 9000 {
		return int(id - 9000)
	}
	return int((id - 1) / 1000)
}
