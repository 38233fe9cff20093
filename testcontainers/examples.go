package testcontainers

// Example functions have no testing.TB: these two give them the servers
// the package's tests use, resolved the same way (environment, Docker, then
// binaries on PATH) and shared with them, so that an Example runs on a fresh
// machine too. A server they start is stopped by Main, like the tests'.

// RedisAddr returns the address of the standalone Redis that Redis uses.
func RedisAddr() (string, error) {
	addrs, _, err := redisServer.get(findRedis)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// PostgresDSN returns the DSN of the PostgreSQL server that Postgres uses,
// as a user that may create databases (its own database, not one made for
// a test: an Example that writes must clean up after itself).
func PostgresDSN() (string, error) {
	dsn, _, err := pgServer.get(findPostgres)
	return dsn, err
}

// ExampleDatabase returns a fresh database on the server PostgresDSN
// names, for an Example that writes: drop closes it and drops the database
// (with its connections) when the Example ends.
func ExampleDatabase() (db *PostgresDB, drop func() error, err error) {
	admin, src, err := pgServer.get(findPostgres)
	if err != nil {
		return nil, nil, err
	}
	db, drop, err = createDatabase(admin, "ak_example_")
	if err != nil {
		return nil, nil, err
	}
	db.Source = src
	return db, drop, nil
}
