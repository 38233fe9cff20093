package topology

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// slotOf returns the Cluster hash slot of key, following the hash-tag rule:
// the part between the first '{' and the next '}' when it is not empty.
func slotOf(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					return int(crc16(key) % clusterSlots)
				}
			}
			break
		}
	}
	return int(crc16(key) % clusterSlots)
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster uses for slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// mgetBySlot is a Cluster's MGet: one MGET per hash slot (a Cluster
// refuses one whose keys span slots), all in one pipeline, the replies
// put back in the order of keys.
func mgetBySlot(ctx context.Context, c *redis.ClusterClient, keys []string) ([]any, error) {
	bySlot := make(map[int][]int)
	var order []int
	for i, k := range keys {
		s := slotOf(k)
		if _, ok := bySlot[s]; !ok {
			order = append(order, s)
		}
		bySlot[s] = append(bySlot[s], i)
	}
	cmds := make([]*redis.SliceCmd, len(order))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, s := range order {
			idx := bySlot[s]
			ks := make([]string, len(idx))
			for j, i := range idx {
				ks[j] = keys[i]
			}
			cmds[n] = p.MGet(ctx, ks...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for n, s := range order {
		vals := cmds[n].Val()
		for j, i := range bySlot[s] {
			if j < len(vals) {
				out[i] = vals[j]
			}
		}
	}
	return out, nil
}
