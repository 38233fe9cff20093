package peers

import (
	"context"
	"errors"
	"strconv"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/cacheaside/msgpackcodec"
)

// AsidekitMsgpack is an explanatory hit variant: asidebench's asidekit hit
// variant (cacheaside.Entity.Get, Mutex policy, 10% jitter) with
// cacheaside.Options.Codec set to msgpackcodec.Codec (MessagePack, the
// encoding jetcache-go and go-redis/cache use by default) in place of
// asidekit's default JSON. Next to the default row it separates what the
// codec costs from what the library does around it.
const AsidekitMsgpack = "asidekit+msgpack"

// msgpackVariant is AsidekitMsgpack.
func msgpackVariant() benchmarks.Variant {
	return benchmarks.Variant{
		Name:  AsidekitMsgpack,
		Notes: "not a default: asidekit's hit path with Options.Codec = msgpack (the peers' codec) (cacheaside/msgpackcodec) instead of JSON",
		New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
			cache, err := cacheaside.New(s.Client, &cacheaside.Options{Namespace: s.Namespace, Codec: msgpackcodec.Codec{}})
			if err != nil {
				return nil, err
			}
			ent, err := cacheaside.NewEntity[benchmarks.Value](cache, "user",
				cacheaside.Policy{TTL: s.TTL, Strategy: cacheaside.Mutex, Jitter: 0.1})
			if err != nil {
				_ = cache.Close()
				return nil, err
			}
			return &entitySubject{cache: cache, ent: ent, load: s.Load}, nil
		},
	}
}

// entitySubject reads through a cacheaside.Entity with the Setup's loader.
type entitySubject struct {
	cache *cacheaside.Cache
	ent   *cacheaside.Entity[benchmarks.Value]
	load  benchmarks.Loader
}

func (e *entitySubject) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	v, err := e.ent.Get(ctx, strconv.FormatInt(id, 10), func(ctx context.Context, _ string) (benchmarks.Value, error) {
		v, err := e.load(ctx, id)
		if errors.Is(err, benchmarks.ErrNotFound) {
			return v, cacheaside.ErrNotFound
		}
		return v, err
	})
	if errors.Is(err, cacheaside.ErrNotFound) {
		return v, benchmarks.ErrNotFound
	}
	return v, err
}

func (e *entitySubject) Close() error { return e.cache.Close() }
