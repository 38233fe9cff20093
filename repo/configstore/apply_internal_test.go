package configstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// Copies of two commits arriving in reverse order: the older one must not
// overwrite the newer one, for values and for deletions alike.
func TestMirror_olderVersionLoses(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	s := &Store{rdb: r.Client, hash: r.Namespace + ":cfg:{x}", channel: r.Namespace + ":cfg:{x}:changes"}
	ctx := context.Background()
	steps := []struct {
		c    Change
		want string
	}{
		{Change{Key: "k", Value: "third", Version: 3}, "3:third"},
		{Change{Key: "k", Value: "second", Version: 2}, "3:third"},
		{Change{Key: "k", Value: "again", Version: 3}, "3:third"},
		{Change{Key: "k", Version: 4, Deleted: true}, "4"},
		{Change{Key: "k", Value: "first", Version: 1}, "4"},
		{Change{Key: "k", Value: "reborn", Version: 5}, "5:reborn"},
	}
	for _, st := range steps {
		if err := s.mirror(ctx, []Change{st.c}); err != nil {
			t.Fatal(err)
		}
		if got := r.Client.HGet(ctx, s.hash, "k").Val(); got != st.want {
			t.Fatalf("after %+v: hash holds %q, want %q", st.c, got, st.want)
		}
	}
	// A foreign entry is replaced by any version.
	r.Client.HSet(ctx, s.hash, "k", "garbage")
	if err := s.mirror(ctx, []Change{{Key: "k", Value: "v", Version: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := r.Client.HGet(ctx, s.hash, "k").Val(); got != "1:v" {
		t.Fatalf("foreign entry not replaced: %q", got)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	good := map[string]entry{
		"1:":       {version: 1},
		"12:a:b":   {version: 12, value: "a:b"},
		"7":        {version: 7, deleted: true},
		"0:x\ny\n": {version: 0, value: "x\ny\n"},
	}
	for in, want := range good {
		got, ok := decode(in)
		if !ok || got != want {
			t.Errorf("decode(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
		if enc := want.encode(); enc != in {
			t.Errorf("encode(%+v) = %q, want %q", want, enc, in)
		}
	}
	for _, in := range []string{"", ":x", "x:1", "-1:x", "+1:x", "1x", "99999999999999999999:x"} {
		if e, ok := decode(in); ok {
			t.Errorf("decode(%q) = %+v, want not ok", in, e)
		}
	}
}

func TestParseMessage(t *testing.T) {
	t.Parallel()
	got, err := parseMessage("1:a5:2:x:y3:b:c1:5" + "2:zz0:")
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Key: "a", Value: "x:y", Version: 2},
		{Key: "b:c", Version: 5, Deleted: true},
		{Key: "zz", Deleted: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"x", "5:ab", "1:a", "1:a3:abc", "1:a-1:"} {
		if cs, err := parseMessage(bad); err == nil {
			t.Errorf("parseMessage(%q) = %+v, want an error", bad, cs)
		}
	}
}

// A quiet subscription pings and keeps delivering.
func TestWatch_quietChannelPings(t *testing.T) {
	t.Parallel()
	s, r := newStore(t)
	name := "configstore-test-" + r.Namespace
	c := redis.NewClient(&redis.Options{Addr: r.Addrs[0], ClientName: name})
	defer c.Close()
	watcher, err := New(c, s.db, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	watcher.watchPing = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := watcher.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server sees the subscription's connection send PINGs.
	for pinged := false; !pinged; {
		list, err := r.Client.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "name="+name+" ") && strings.Contains(line, "cmd=ping") {
				pinged = true
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no PING from the quiet subscription")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case c := <-ch:
			if c.Key == "k" && c.Value == "v" {
				return
			}
		case <-ctx.Done():
			t.Fatal("change not delivered after pings")
		}
	}
}
