package topology

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestSlotOf(t *testing.T) {
	// Reference values from CLUSTER KEYSLOT.
	for key, want := range map[string]int{"foo": 12182, "{user1000}.following": 3443, "ak:{user:42}": slotOf("user:42"), "{}x": slotOf("{}x")} {
		if got := slotOf(key); got != want {
			t.Errorf("slotOf(%q) = %d, want %d", key, got, want)
		}
	}
	r := testcontainers.RedisCluster(t)
	for _, key := range []string{r.Namespace + ":{user:42}", "plain", "a{b}c", "{}x"} {
		want, err := r.Client.ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := slotOf(key); int64(got) != want {
			t.Errorf("slotOf(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}
