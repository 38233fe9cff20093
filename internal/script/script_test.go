package script_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// counter records the script commands a client sends: each single
// command and each pipeline is one round trip on a standalone server.
// Other commands (a new connection's handshake, a test's checks) are not
// counted.
type counter struct {
	mu    sync.Mutex
	trips int            // commands and pipelines
	names map[string]int // commands by name, piped or not
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.note(cmd)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.note(cmds...)
		return next(ctx, cmds)
	}
}

// note counts the script commands of cmds, sent in one round trip.
func (c *counter) note(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]int{}
	}
	n := 0
	for _, cmd := range cmds {
		if name := cmd.Name(); name == "eval" || name == "evalsha" {
			c.names[name]++
			n++
		}
	}
	if n > 0 {
		c.trips++
	}
}

func (c *counter) take() (trips int, names map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, names = c.trips, c.names
	c.trips, c.names = 0, nil
	return trips, names
}

// fresh returns a script no server has seen: its source carries a random
// comment, so its digest is new and every server answers NOSCRIPT until
// it runs once.
func fresh(t testing.TB, body string) *script.Script {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return script.New("-- " + t.Name() + " " + hex.EncodeToString(b[:]) + "\n" + body)
}

// incr increments KEYS[1] and returns the new count; with ARGV[1] "fail"
// it increments and then fails, so a test can tell how often it ran.
const incrBody = `local n = redis.call('INCR', KEYS[1])
if ARGV[1] == 'fail' then return redis.error_reply('BOOM ' .. KEYS[1]) end
return n`

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// keysOf returns n keys in namespace ns, each with its own hash tag, so
// that on a Cluster they spread over every node.
func keysOf(ns string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s:{k%d}", ns, i)
	}
	return ks
}

func incrCalls(s *script.Script, keys []string, args ...any) []script.Call {
	calls := make([]script.Call, len(keys))
	for i, k := range keys {
		calls[i] = script.Call{Script: s, Keys: []string{k}, Args: args}
	}
	return calls
}

// wantCounts checks every call's reply against want and the counters in
// Redis against ran.
func wantCounts(t *testing.T, c redis.UniversalClient, calls []script.Call, want int64) {
	t.Helper()
	ctx := ctxT(t)
	for i, cl := range calls {
		if n, err := cl.Cmd.Int64(); err != nil || n != want {
			t.Errorf("call %d (%s): %d, %v; want %d", i, cl.Keys[0], n, err, want)
		}
		if n, err := c.Get(ctx, cl.Keys[0]).Int64(); err != nil || n != want {
			t.Errorf("%s in Redis = %d, %v; want %d (the script ran once per call)", cl.Keys[0], n, err, want)
		}
	}
}

// A server that knows no script (SCRIPT FLUSH) costs RunMany one more
// round trip, with EVAL, and Run one more command; then both are EVALSHA
// only. The server is private: a flush would disturb other packages'
// tests on a shared one.
func TestRunMany_coldServer(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	var cnt counter
	c.AddHook(&cnt)
	ctx := ctxT(t)
	s := script.New(incrBody)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cnt.take()

	calls := incrCalls(s, keysOf("cold", 50))
	if err := script.RunMany(ctx, c, calls); err != nil {
		t.Fatal(err)
	}
	if trips, names := cnt.take(); trips != 2 || names["evalsha"] != 50 || names["eval"] != 50 {
		t.Errorf("cold batch: %d round trips, %v; want 2: 50 EVALSHA, then 50 EVAL", trips, names)
	}
	wantCounts(t, c, calls, 1)

	calls = incrCalls(s, keysOf("cold", 50))
	if err := script.RunMany(ctx, c, calls); err != nil {
		t.Fatal(err)
	}
	if trips, names := cnt.take(); trips != 1 || names["eval"] != 0 {
		t.Errorf("warm batch: %d round trips, %v; want one pipeline of EVALSHA", trips, names)
	}
	wantCounts(t, c, calls, 2)

	// Run, cold then warm.
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cnt.take()
	for want := int64(1); want <= 2; want++ {
		if n, err := s.Run(ctx, c, []string{"cold:run"}).Int64(); err != nil || n != want {
			t.Fatalf("Run %d = %d, %v", want, n, err)
		}
	}
	if trips, names := cnt.take(); trips != 3 || names["eval"] != 1 {
		t.Errorf("Run cold then warm: %d round trips, %v; want 3 (EVALSHA, EVAL, EVALSHA)", trips, names)
	}
}

// In one batch, calls of a script the server knows run at once; calls of
// one it does not are the only ones sent again, and every reply lands on
// its own call.
func TestRunMany_mixedNoScript(t *testing.T) {
	r := testcontainers.Redis(t)
	c := r.NewClient(t)
	var cnt counter
	c.AddHook(&cnt)
	ctx := ctxT(t)
	known, unknown := fresh(t, incrBody), fresh(t, "return 1000 + redis.call('INCR', KEYS[1])")
	if err := known.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	keys := keysOf(r.Namespace, 30)
	calls := make([]script.Call, len(keys))
	for i, k := range keys {
		s := known
		if i%3 == 1 {
			s = unknown
		}
		calls[i] = script.Call{Script: s, Keys: []string{k}}
	}
	cnt.take()
	if err := script.RunMany(ctx, c, calls); err != nil {
		t.Fatal(err)
	}
	if trips, names := cnt.take(); trips != 2 || names["evalsha"] != 30 || names["eval"] != 10 {
		t.Errorf("%d round trips, %v; want 30 EVALSHA, then EVAL for the 10 unknown calls", trips, names)
	}
	for i, cl := range calls {
		want := int64(1)
		if i%3 == 1 {
			want = 1001
		}
		if n, err := cl.Cmd.Int64(); err != nil || n != want {
			t.Errorf("call %d: %d, %v; want %d", i, n, err, want)
		}
		if n, err := c.Get(ctx, cl.Keys[0]).Int64(); err != nil || n != 1 {
			t.Errorf("%s = %d, %v; want 1 (ran once)", cl.Keys[0], n, err)
		}
	}
}

// On a Cluster the pipeline is split by node. A script that only one
// primary knows is sent again, with EVAL, to the others only, and every
// call gets its reply.
func TestRunMany_cluster(t *testing.T) {
	r := testcontainers.RedisCluster(t)
	cc, ok := r.Client.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("cluster client is %T", r.Client)
	}
	var cnt counter
	cc.AddHook(&cnt)
	ctx := ctxT(t)
	s := fresh(t, incrBody)
	var once sync.Once
	loaded := ""
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		var err error
		once.Do(func() {
			loaded = m.Options().Addr
			err = s.Load(ctx, m).Err()
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := keysOf(r.Namespace, 90)
	onLoaded := 0
	for _, k := range keys {
		m, err := cc.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if m.Options().Addr == loaded {
			onLoaded++
		}
	}
	if onLoaded == 0 || onLoaded == len(keys) {
		t.Fatalf("%d of %d keys on the node that knows the script; want some", onLoaded, len(keys))
	}

	calls := incrCalls(s, keys)
	cnt.take()
	if err := script.RunMany(ctx, cc, calls); err != nil {
		t.Fatal(err)
	}
	if _, names := cnt.take(); names["evalsha"] != len(keys) || names["eval"] != len(keys)-onLoaded {
		t.Errorf("%v; want %d EVALSHA and EVAL for the %d calls of the nodes without the script", names, len(keys), len(keys)-onLoaded)
	}
	wantCounts(t, cc, calls, 1)

	calls = incrCalls(s, keys)
	if err := script.RunMany(ctx, cc, calls); err != nil {
		t.Fatal(err)
	}
	if _, names := cnt.take(); names["eval"] != 0 {
		t.Errorf("second batch sent %d EVAL; every node knows the script now", names["eval"])
	}
	wantCounts(t, cc, calls, 2)
}

// A call whose script fails returns its error on its own Cmd and from
// RunMany; the other calls keep their replies, and no call runs twice,
// whether its script was known or not.
func TestRunMany_scriptErrorKeepsOthers(t *testing.T) {
	for name, get := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			r := get(t)
			c := r.NewClient(t)
			ctx := ctxT(t)
			known, cold := fresh(t, incrBody), fresh(t, incrBody+" -- cold")
			if err := known.Load(ctx, c).Err(); err != nil {
				t.Fatal(err)
			}
			keys := keysOf(r.Namespace, 12)
			calls := make([]script.Call, len(keys))
			for i, k := range keys {
				s, arg := known, "ok"
				if i%2 == 1 {
					s = cold
				}
				if i == 4 || i == 7 { // one known, one cold
					arg = "fail"
				}
				calls[i] = script.Call{Script: s, Keys: []string{k}, Args: []any{arg}}
			}
			err := script.RunMany(ctx, c, calls)
			if err == nil || !strings.Contains(err.Error(), "BOOM "+keys[4]) {
				t.Fatalf("RunMany = %v; want the first failed call's error (call 4)", err)
			}
			for i, cl := range calls {
				n, err := cl.Cmd.Int64()
				switch {
				case i == 4 || i == 7:
					if err == nil || !strings.Contains(err.Error(), "BOOM "+keys[i]) {
						t.Errorf("call %d = %d, %v; want its BOOM", i, n, err)
					}
				case err != nil || n != 1:
					t.Errorf("call %d = %d, %v; want 1", i, n, err)
				}
				if v, err := c.Get(ctx, keys[i]).Int64(); err != nil || v != 1 {
					t.Errorf("%s = %d, %v; want 1 (each call ran once)", keys[i], v, err)
				}
			}
		})
	}
}

func TestRunMany_emptyAndUnreachable(t *testing.T) {
	ctx := ctxT(t)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	var cnt counter
	c.AddHook(&cnt)
	if err := script.RunMany(ctx, c, nil); err != nil {
		t.Fatalf("empty batch = %v", err)
	}
	if trips, _ := cnt.take(); trips != 0 {
		t.Fatalf("empty batch sent %d round trips", trips)
	}
	calls := incrCalls(script.New(incrBody), []string{"a", "b"})
	if err := script.RunMany(ctx, c, calls); err == nil {
		t.Fatal("RunMany on an unreachable server succeeded")
	}
	for i, cl := range calls {
		if cl.Cmd.Err() == nil || script.IsNoScript(cl.Cmd.Err()) {
			t.Errorf("call %d: %v; want the connection's error", i, cl.Cmd.Err())
		}
	}
}

// A hook that refuses a pipeline without sending it sets no command's
// error: RunMany still reports it.
func TestRunMany_refusedPipeline(t *testing.T) {
	r := testcontainers.Redis(t)
	c := r.NewClient(t)
	c.AddHook(refuse{})
	calls := incrCalls(script.New(incrBody), keysOf(r.Namespace, 2))
	if err := script.RunMany(ctxT(t), c, calls); err != errRefused {
		t.Fatalf("RunMany through a refusing hook = %v, want %v", err, errRefused)
	}
}

var errRefused = fmt.Errorf("refused by hook")

type refuse struct{}

func (refuse) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (refuse) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (refuse) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { return errRefused }
}
