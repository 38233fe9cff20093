package cacheaside

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// Taking a lease twice with one token grants it twice (same version); a
// different token still finds it held.
func TestLease_sameTokenGrantedAgain(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{Strategy: Mutex})
	ctx := context.Background()
	key, _ := e.Key("1")
	first, err := lease(ctx, e, key, "tok")
	if err != nil || first.status != leaseAcquired {
		t.Fatalf("first lease = %+v, %v", first, err)
	}
	again, err := lease(ctx, e, key, "tok")
	if err != nil || again.status != leaseAcquired || again.ver != first.ver {
		t.Fatalf("same token again = %+v, %v; want granted with version %q", again, err, first.ver)
	}
	if other, err := lease(ctx, e, key, "other"); err != nil || other.status != leaseHeld {
		t.Fatalf("other token = %+v, %v; want held", other, err)
	}
	// Nothing to rebuild any more: the holder's retry gives the lease up.
	if err := e.Set(ctx, "1", user{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	if r, err := lease(ctx, e, key, "tok"); err != nil || r.status != leaseNoop {
		t.Fatalf("lease over a fresh entry = %+v, %v; want noop", r, err)
	}
	if n := r.Client.Exists(ctx, key+":lock").Val(); n != 0 {
		t.Fatal("the holder's lease survived a noop retry")
	}
}

// lease runs lease.lua alone, in miss mode, for key with lease token tok.
func lease(ctx context.Context, e *Entity[user], key, tok string) (leaseReply, error) {
	calls := []script.Call{e.leaseCall(item{key: key, token: tok}, "", time.Now().UnixMilli())}
	if err := script.RunMany(ctx, e.c.client, calls); err != nil {
		return leaseReply{}, err
	}
	res, err := calls[0].Cmd.Slice()
	if err != nil {
		return leaseReply{}, err
	}
	return parseLease(res)
}

// lossyDialer dials Redis through connections that, once armed, run the
// first command carrying match on the server and then lose its reply (the
// connection drops), so that go-redis retries it on a new connection.
type lossyDialer struct {
	match []byte
	armed atomic.Bool
	lost  atomic.Int64
}

func (d *lossyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &lossyConn{Conn: c, d: d}, nil
}

type lossyConn struct {
	net.Conn
	d    *lossyDialer
	drop atomic.Bool
}

func (c *lossyConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.d.match) && c.d.armed.CompareAndSwap(true, false) {
		c.drop.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *lossyConn) Read(b []byte) (int, error) {
	if c.drop.CompareAndSwap(true, false) {
		_, _ = c.Conn.Read(b) // the reply has arrived: the server ran the command
		_ = c.Conn.Close()
		c.d.lost.Add(1)
		return 0, io.ErrUnexpectedEOF
	}
	return c.Conn.Read(b)
}

// A Get whose lease.lua reply is lost (the script took the lease) retries
// the script and is granted its own lease: it loads once and does not wait
// for itself until WaitTimeout.
func TestLease_lostReplyRetried(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	d := &lossyDialer{match: []byte(leaseScript.Hash())}
	client := redis.NewClient(&redis.Options{Addr: r.Addrs[0], Dialer: d.dial})
	t.Cleanup(func() { _ = client.Close() })
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: 500 * time.Millisecond}
	e := newEntity[user](t, newCache(t, client, r.Namespace, nil), "user", p)
	ctx := context.Background()
	if err := leaseScript.Load(ctx, client).Err(); err != nil { // EVALSHA runs at once
		t.Fatal(err)
	}
	d.armed.Store(true)
	var c counter
	u, err := e.Get(ctx, "1", c.load)
	if err != nil || u.ID != "1" {
		t.Fatalf("Get = %+v, %v", u, err)
	}
	if d.lost.Load() != 1 {
		t.Fatalf("lost replies = %d, want 1 (the test did not drop the lease reply)", d.lost.Load())
	}
	if n := c.calls.Load(); n != 1 {
		t.Fatalf("loads = %d, want 1", n)
	}
	if s := e.Stats(); s.LockWaits != 0 || s.LockTimeouts != 0 {
		t.Fatalf("stats = %+v; the caller waited for its own lease", s)
	}
	key, _ := e.Key("1")
	if n := r.Client.Exists(ctx, key, key+":lock").Val(); n != 1 {
		t.Fatalf("entry and lease keys = %d, want the entry only", n)
	}
}
