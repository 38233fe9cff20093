// Package compat holds the tests that run asidekit on the embedded backend
// of its demo and benchmarks: SQLite (github.com/glebarez/sqlite, pure Go)
// in place of PostgreSQL, and miniredis in place of Redis. The library's
// own tests run on real PostgreSQL and Redis only; these check that the
// same code keeps working on the stand-ins that `make demo`,
// examples/quickstart and examples/catalog use when no server is named.
//
// It is a module of its own, with no code besides its tests, so that the
// library's go.mod does not require SQLite (and its modernc.org chain) or
// miniredis: an application that imports asidekit never has them in its
// module graph. Each file is named after the package it checks
// (repo_sqlite_test.go for repo, and so on). `make test` and `make lint`
// include it.
package compat
