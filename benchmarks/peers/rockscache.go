package peers

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/dtm-labs/rockscache"

	"github.com/asidekit/asidekit/benchmarks"
)

// rocksSubject reads through rockscache's Fetch2, which caches strings:
// the value is the row's JSON, and "" stands for "not found" (rockscache
// caches it for EmptyExpire).
type rocksSubject struct {
	rc     *rockscache.Client
	prefix string
	expire time.Duration
	load   benchmarks.Loader
}

// newRocks builds a rockscache client with NewDefaultOptions, as its README
// does. rockscache stores a value for expire − Delay − rand·adj·expire,
// truncated to whole seconds; Fetch2 is given TTL + Delay so that the
// value lives the scenario's TTL less rockscache's own jitter. nullTTL,
// when > 0, is EmptyExpire (default 60 s). noJitter sets
// RandomExpireAdjustment to 0: the breakdown scenario runs every variant
// without jitter, and with a TTL of a few seconds rockscache's 10% of
// (TTL + Delay) would otherwise truncate the lifetime to 0 or 1 s.
func newRocks(s benchmarks.Setup, nullTTL time.Duration, noJitter bool) (benchmarks.Subject, error) {
	opts := rockscache.NewDefaultOptions()
	if nullTTL > 0 {
		opts.EmptyExpire = nullTTL
	}
	if noJitter {
		opts.RandomExpireAdjustment = 0
	}
	return &rocksSubject{
		rc:     rockscache.NewClient(s.Client, opts),
		prefix: s.Namespace + ":user:",
		expire: s.TTL + opts.Delay,
		load:   s.Load,
	}, nil
}

// Delete marks id's value deleted with TagAsDeleted2, rockscache's call
// after a write: the value stays, marked, and the next reader recomputes
// it (in the default weak mode the other readers get the old value
// meanwhile; StrongConsistency makes them wait).
func (r *rocksSubject) Delete(ctx context.Context, id int64) error {
	return r.rc.TagAsDeleted2(ctx, r.prefix+itoa(id))
}

func (r *rocksSubject) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	var v benchmarks.Value
	s, err := r.rc.Fetch2(ctx, r.prefix+itoa(id), r.expire, func() (string, error) {
		u, err := r.load(ctx, id)
		if errors.Is(err, benchmarks.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(u)
		return string(b), err
	})
	if err != nil {
		return v, err
	}
	if s == "" {
		return v, benchmarks.ErrNotFound
	}
	err = json.Unmarshal([]byte(s), &v)
	return v, err
}
