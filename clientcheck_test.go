package asidekit

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestClientAdvice(t *testing.T) {
	good := &redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true}
	for name, c := range map[string]struct {
		client redis.UniversalClient
		warn   bool
	}{
		"defaults":            {redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), true},
		"good":                {redis.NewClient(good), false},
		"no context timeouts": {redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 1, ReadTimeout: 1, WriteTimeout: 1}), true},
		"slow reads":          {redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 1, ReadTimeout: time.Second, WriteTimeout: 1, ContextTimeoutEnabled: true}), true},
		"cluster defaults":    {redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), true},
	} {
		got := clientAdvice(c.client) != nil
		_ = c.client.Close()
		if got != c.warn {
			t.Errorf("%s: warns %v, want %v", name, got, c.warn)
		}
	}
}
