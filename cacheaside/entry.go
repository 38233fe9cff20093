package cacheaside

import (
	"encoding/binary"
	"errors"
	"time"
)

// Entry layout (all integers big-endian):
//
//	[0]     magic 0xAC
//	[1]     format version (1)
//	[2]     flags: bit 0 = null ("not found")
//	[3:11]  logical expiry, Unix milliseconds
//	[11:15] last load duration, microseconds (saturating)
//	[15:]   codec payload (empty for null entries)
//
// lease.lua reads the magic, version and expiry: keep them in sync.
const (
	entryMagic   = 0xAC
	entryVersion = 1
	headerLen    = 15

	flagNull      = 1
	knownFlags    = flagNull
	maxDurationUS = 1<<32 - 1
)

var errCorrupt = errors.New("cacheaside: corrupt or foreign entry")

// header is the decoded header of an entry.
type header struct {
	null   bool
	expiry int64 // Unix milliseconds
	loadUS uint32
}

// encodeEntry returns the header followed by payload, in one allocation.
func encodeEntry(h header, payload []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(payload))
	b[0] = entryMagic
	b[1] = entryVersion
	if h.null {
		b[2] = flagNull
	}
	binary.BigEndian.PutUint64(b[3:11], uint64(h.expiry))
	binary.BigEndian.PutUint32(b[11:15], h.loadUS)
	return append(b, payload...)
}

// decodeEntry parses b's header and returns it with the payload (a
// sub-slice of b). It never panics: anything that is not an entry of this
// format is errCorrupt.
func decodeEntry(b []byte) (header, []byte, error) {
	if len(b) < headerLen || b[0] != entryMagic || b[1] != entryVersion || b[2]&^knownFlags != 0 {
		return header{}, nil, errCorrupt
	}
	h := header{
		null:   b[2]&flagNull != 0,
		expiry: int64(binary.BigEndian.Uint64(b[3:11])),
		loadUS: binary.BigEndian.Uint32(b[11:15]),
	}
	if h.expiry <= 0 || (h.null && len(b) != headerLen) {
		return header{}, nil, errCorrupt
	}
	return h, b[headerLen:], nil
}

// durationUS converts d to saturating microseconds for the header.
func durationUS(d time.Duration) uint32 {
	us := d.Microseconds()
	switch {
	case d <= 0:
		return 0 // unknown (Set)
	case us == 0:
		return 1 // a load took some time; 0 would disable EarlyRefresh
	case us > maxDurationUS:
		return maxDurationUS
	}
	return uint32(us)
}
