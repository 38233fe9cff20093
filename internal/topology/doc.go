// Package topology is asidekit's one seam between its packages and the
// shape of a go-redis client: whether it is one server or a Cluster,
// which masters it has, which node serves a key, and how to reach every
// node. No other package of the library looks at the client's concrete
// type: they call Of and ask the Topology.
//
// Of knows two clients. A *redis.Client is Standalone: one server, or
// the master a Sentinel failover client (redis.NewFailoverClient) is
// connected to, which go-redis follows across failovers by itself. A
// *redis.ClusterClient is a Cluster, redis.NewFailoverClusterClient's
// included. Any other client (a Ring, a custom UniversalClient) is
// Unsupported: its commands go through the client as it routes them, and
// per-node work fails with ErrUnsupported.
//
// Each kind of client is one file (standalone.go, cluster.go, other.go)
// implementing Topology, and one case in Of. A Ring would be ring.go:
// Kind Cluster (callers read it as "keys spread over several masters"),
// its shards as masters (GetShardClients, GetShardClientForKey), its
// nodes watched with OnNewNode and ForEachShard, Reload a no-op, an MGET
// split by shard (GetShardClientForKey) rather than by slot, plain
// pub/sub. A Sentinel failover client needs nothing: NewFailoverClient
// returns a *redis.Client (Standalone), NewFailoverClusterClient a
// *redis.ClusterClient (Cluster); another client type of its own would be
// one more file the same way. Adding a kind changes what callers accept:
// ErrLocalUnsupported and ReplicaAcks's refusal in cacheaside take their
// wording from Supported and SupportedSentinel, which would name it.
package topology
