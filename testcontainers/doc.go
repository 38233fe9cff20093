// Package testcontainers hands tests real, isolated PostgreSQL, Redis and
// Redis Cluster backends.
//
// Each helper resolves its backend once per test binary, in this order:
//
//  1. the environment: ASIDEKIT_POSTGRES_DSN, ASIDEKIT_REDIS_ADDR and
//     ASIDEKIT_REDIS_CLUSTER_ADDRS (comma-separated seed addresses);
//  2. Docker, through the docker command-line client, when a Docker engine
//     answers (so the engine's client libraries stay out of the module
//     graph of every module that requires asidekit);
//  3. the postgres/initdb and redis-server binaries on PATH, started in a
//     temporary directory on free loopback ports and stopped when the test
//     binary exits (as the postgres user when the tests run as root);
//  4. otherwise the test fails with a message naming the three ways above.
//
// Every test then gets its own PostgreSQL database (created for it and
// dropped at cleanup) and its own Redis key namespace (whose keys are
// removed with SCAN + UNLINK at cleanup; the server is never flushed), so
// tests in different packages may run in parallel against one server.
//
// Packages that want the binaries' temporary directories and the containers
// removed at exit call Main from their TestMain; without it the servers
// started from binaries still stop when the test binary exits, while
// containers stay until removed by hand (they carry the label
// asidekit.testcontainers).
package testcontainers
