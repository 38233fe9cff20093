// Package testkit holds the measuring helpers that tests and benchmarks in
// several modules of this repository share: a counter of the SQL
// statements GORM runs, and the time Redis spends running scripts. It is
// for tests only; the library does not import it.
package testkit
