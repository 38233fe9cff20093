package cacheaside

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// killNear closes the near cache connections of namespace ns (CLIENT
// KILL), on every master, and returns how many it closed.
func killNear(t *testing.T, client redis.UniversalClient, ns string) int {
	t.Helper()
	ctx := context.Background()
	var killed atomic.Int64
	kill := func(ctx context.Context, node redis.Cmdable) error {
		list, err := node.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(list) {
			if !strings.Contains(line, " name="+ns+":near ") {
				continue
			}
			var id int64
			if _, err := fmt.Sscanf(line, "id=%d", &id); err != nil {
				return err
			}
			if err := node.ClientKillByFilter(ctx, "ID", fmt.Sprint(id)).Err(); err != nil {
				return err
			}
			killed.Add(1)
		}
		return nil
	}
	var err error
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return kill(ctx, node) })
	} else {
		err = kill(ctx, client)
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(killed.Load())
}

// When the invalidation connection is killed, changes made meanwhile are
// not lost: the near cache is flushed before it serves again, and fills
// again once the connection is back.
func TestLocal_connectionLoss(t *testing.T) {
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		rc, reader := nearProcess(t, r, Policy{}, nil)
		_, writer := nearProcess(t, r, Policy{}, nil)
		ctx := context.Background()
		warm(t, reader, "1", src.load)
		flushes := reader.Stats().LocalFlushes

		if killNear(t, r.Client, r.Namespace) == 0 {
			t.Fatal("no near cache connection found")
		}
		// A write whose invalidation may have been lost with the connection.
		ver := src.bump("1")
		if err := writer.Set(ctx, "1", user{ID: "1", Ver: ver}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
		if v, err := reader.Get(ctx, "1", src.load); err != nil || v.Ver != ver {
			t.Fatalf("after the flush: %+v, %v; want version %d", v, err, ver)
		}
		// Back up: it fills and is invalidated again.
		waitLocal(t, rc)
		warm(t, reader, "1", src.load)
		ver = src.bump("1")
		if err := writer.Invalidate(ctx, "1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			v, err := reader.Get(ctx, "1", src.load)
			return err == nil && v.Ver == ver
		})
	})
}

// A value read before a change is never kept once the change is known: a
// fill ticketed before an invalidation, or before a connection loss, is
// refused.
func TestLocal_fillRefused(t *testing.T) {
	r := testcontainers.Redis(t)
	src := newDB()
	rc, reader := nearProcess(t, r, Policy{}, nil)
	_, writer := nearProcess(t, r, Policy{}, nil)
	ctx := context.Background()
	key, _ := reader.Key("1")
	old := user{ID: "1"}
	far := time.Now().Add(time.Hour).UnixMilli()
	kept := func() bool { var v user; ok, _ := reader.local.get(reader.local.id(key), &v); return ok }

	tk := reader.local.ticket(key)
	invs := reader.Stats().LocalInvalidations
	if err := writer.Set(ctx, "1", user{ID: "1", Ver: src.bump("1")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalInvalidations > invs })
	if reader.local.put(tk, key, &view[user]{v: old, expiry: far}); kept() {
		t.Fatal("a fill ticketed before an invalidation was kept")
	}

	tk = reader.local.ticket(key)
	flushes := reader.Stats().LocalFlushes
	killNear(t, r.Client, r.Namespace)
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
	waitLocal(t, rc)
	if reader.local.put(tk, key, &view[user]{v: old, expiry: far}); kept() {
		t.Fatal("a fill ticketed before a connection loss was kept")
	}

	if reader.local.put(reader.local.ticket(key), key, &view[user]{v: old, expiry: far}); !kept() {
		t.Fatal("a fill with a current ticket was refused")
	}
}
