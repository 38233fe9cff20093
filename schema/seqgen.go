package schema

import "time"

// SeqSegment is the high-water mark of package seqgen for one business code
// and day: every sequence number issued for (Biz, Day) is at or below
// HighWater. seqgen raises it in segments, inside a transaction, before the
// Redis counter may hand out the numbers of a segment; it never lowers it.
type SeqSegment struct {
	Biz       string    `gorm:"primaryKey;size:64" json:"biz"`
	Day       string    `gorm:"primaryKey;size:8" json:"day"` // yyyymmdd, in the generator's time zone
	HighWater int64     `gorm:"not null;default:0" json:"high_water"`
	UpdatedAt time.Time `gorm:"not null" json:"updated_at"`
}

// TableName is asidekit_seq_segments.
func (SeqSegment) TableName() string { return "asidekit_seq_segments" }
