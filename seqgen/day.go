package seqgen

import (
	"strconv"
	"time"
)

// Day is the day a number belongs to, computed once per call from one
// reading of the clock in Options.Location.
type Day struct {
	// Key is the day as yyyymmdd: it names the Redis key and the DB row.
	Key string
	// Start is the midnight that begins the day, in Options.Location.
	Start time.Time
	// Prefix is what every serial of this biz and day starts with: the
	// biz's prefix followed by the date in Options.DateLayout, e.g.
	// "ORD20261129".
	Prefix string
}

// dayOf returns the day of instant now for a biz whose printed prefix is
// prefix.
func (g *Generator) dayOf(now time.Time, prefix string) Day {
	t := now.In(g.opts.Location)
	y, m, d := t.Date()
	return Day{
		Key:    t.Format("20060102"),
		Start:  time.Date(y, m, d, 0, 0, 0, 0, g.opts.Location),
		Prefix: prefix + t.Format(g.opts.DateLayout),
	}
}

// format returns day.Prefix followed by v padded with zeros to width
// digits (more when v needs them).
func format(prefix string, v int64, width int) string {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	b := make([]byte, 0, len(prefix)+max(width, len(d)))
	b = append(b, prefix...)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	b = append(b, d...)
	return string(b)
}
