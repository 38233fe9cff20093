package schema

import "time"

// Config is one setting of asidekit's config store (package
// repo/configstore): the database is its source of truth and a Redis hash
// mirrors it. Namespace groups settings (one Redis hash per namespace).
//
// Version rises by one on every write of a key, deletions included: a
// deleted key keeps its row with a NULL Value (a tombstone), so that a key
// deleted and set again never reuses a version and an older write can never
// be mistaken for a newer one.
type Config struct {
	Namespace string    `gorm:"primaryKey;size:255" json:"namespace"`
	Key       string    `gorm:"primaryKey;size:1024" json:"key"`
	Value     *string   `gorm:"type:text" json:"value"` // nil: deleted
	Version   int64     `gorm:"not null;default:1" json:"version"`
	UpdatedAt time.Time `gorm:"not null" json:"updated_at"`
}

// TableName is asidekit_config.
func (Config) TableName() string { return "asidekit_config" }
