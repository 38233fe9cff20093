// Package topology is asidekit's one seam between its packages and the
// shape of a go-redis client: whether it is one server or a Cluster,
// which masters it has, which node serves a key, and how to reach every
// node. No other package looks at the client's concrete type; they call
// Of and ask the Topology.
//
// Of knows two clients. A *redis.Client is Standalone: one server, or
// the master a Sentinel failover client (redis.NewFailoverClient) is
// connected to, which go-redis follows across failovers by itself. A
// *redis.ClusterClient is a Cluster, redis.NewFailoverClusterClient's
// included. Any other client (a Ring, a custom UniversalClient) is
// Unsupported: its commands go through the client as it routes them, and
// per-node work fails with ErrUnsupported.
//
// Each kind of client is one file: standalone.go, cluster.go, other.go.
// A Ring would be one more (ring.go: its masters are its shards,
// GetShardClients and GetShardClientForKey give them, ForEachShard and
// OnNewNode reach them, an MGET is split by shard rather than by slot),
// plus its case in Of; it reports Kind Cluster, which callers read as
// "keys spread over several masters". A Sentinel client needs nothing
// new; only a client type of its own (say a failover client that reads
// from replicas) would, in the same way. Adding one changes what the
// callers accept: ErrLocalUnsupported and ReplicaAcks's refusal in
// cacheaside take their wording from Supported and SupportedSentinel.
package topology
