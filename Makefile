# asidekit — common tasks. `make test` is what CI runs (after .ci/run has
# made sure PostgreSQL and Redis answer); `make demo` needs no server at all.

GO              ?= go

# The go.work at the root exists so that the commands the documents show
# (`go run ./examples/catalog` from the root, `cd benchmarks && go run
# ./cmd/asidebench`) work as written; internal/doccheck checks them. Every
# target here builds each module with its own go.mod instead (the versions
# its users get), never with the workspace's merged build list.
export GOWORK := off
STATICCHECK_VER := v0.8.2
BIN             := $(CURDIR)/.bin
STATICCHECK     := $(BIN)/staticcheck-$(STATICCHECK_VER)

.PHONY: all test stress-test demo bench gobench peers chaos cover lint fmt pathcount

# The repository's modules: the library, then the ones that carry
# dependencies so that the library's users do not (the tests on the embedded
# backend, SQLite and miniredis; asidebench; the Prometheus collectors; the
# peer comparison; the fault-injection suite; the asidekit command; the two
# examples).
MODULES := . compat benchmarks metrics benchmarks/peers chaos cmd/asidekit examples/catalog examples/quickstart

all: lint test

## test: every test with the race detector, against the backends that
## testcontainers finds (environment, Docker, or binaries on PATH).
## Every module in MODULES is tested (the peer comparison too, so the
## adapters to go-zero, rockscache, jetcache-go and go-redis/cache are checked
## on every change); a failing module does not stop the others, and the target
## fails if any did. TEST_JOBS modules run at once (default 3: most of a
## test's time is spent waiting on PostgreSQL and Redis, so two cores carry
## three), the longest first; each module's output is printed whole when it
## ends, with its time, and the target ends with one line per module.
## TEST_P packages of a module run at once (go test -p; default 4, for the
## same reason). -trimpath keeps the checkout's directory out of the build
## cache's keys: without it every clone (CI's is always fresh) compiled
## every package of the repository again, race-instrumented, in each module.
TEST_JOBS ?= 3
TEST_P    ?= 4
TEST_ORDER := . benchmarks chaos cmd/asidekit benchmarks/peers examples/catalog metrics compat examples/quickstart
test:
	@test "$(sort $(TEST_ORDER))" = "$(sort $(MODULES))" || { echo "make test: TEST_ORDER and MODULES differ"; exit 2; }
	@logs=$$(mktemp -d); trap 'rm -rf $$logs' EXIT; \
	printf '%s\n' $(TEST_ORDER) | xargs -P $(TEST_JOBS) -I{} sh -c ' \
		m={}; log=$$1/$$(echo $$m | tr / _); start=$$(date +%s); \
		(cd $$m && $(GO) test -race -trimpath -count=1 -p $(TEST_P) -timeout 30m ./...) >$$log.out 2>&1; rc=$$?; \
		echo "$$rc $$(( $$(date +%s) - start ))" >$$log.rc; \
		{ echo "== $$m (exit $$rc, $$(( $$(date +%s) - start )) s)"; cat $$log.out; } ' _ $$logs; \
	status=0; echo "== make test:"; for m in $(TEST_ORDER); do \
		set -- $$(cat $$logs/$$(echo $$m | tr / _).rc 2>/dev/null || echo "? ?"); \
		[ "$$1" = 0 ] && r=ok || { r=FAIL; status=1; }; printf '%-22s %-4s %s s\n' $$m $$r $$2; \
	done; exit $$status

## stress-test: the timing-sensitive packages, STRESS_COUNT times each, while
## internal/cmd/burner keeps every core busy (one spinner per core; killed
## when the tests end, however they end). For the packages' tests that wait
## on events or leave margins, a slow machine must not make them fail.
## STRESS_PKGS and STRESS_COUNT override the defaults below.
STRESS_PKGS  ?= ./cacheaside/... ./guard/... ./seqgen/... ./repo/... ./testcontainers/...
STRESS_COUNT ?= 3
stress-test:
	mkdir -p $(BIN)
	$(GO) build -o $(BIN)/burner ./internal/cmd/burner
	@$(BIN)/burner & pid=$$!; trap 'kill $$pid; wait $$pid 2>/dev/null' EXIT; \
	echo "$(GO) test -race -count=$(STRESS_COUNT) -timeout 90m $(STRESS_PKGS)"; \
	$(GO) test -race -count=$(STRESS_COUNT) -timeout 90m $(STRESS_PKGS)

## demo: asidebench, every scenario at its embedded -quick sizes, on the
## embedded backend (in-process miniredis with wall-clock TTLs + SQLite): no
## server, no network. About a minute on a 2-core machine, busy or not (plus
## the first build): a line as each scenario starts, its table when it ends,
## then one summary table (what each protection saved: DB loads with and
## without it) and where out/demo/report.md and its charts were written.
## Counts are faithful there; latencies are not representative.
demo:
	cd benchmarks && $(GO) run ./cmd/asidebench -embedded -quick -out $(CURDIR)/out/demo all

## bench: asidebench, every scenario, on the real servers named by
## ASIDEKIT_POSTGRES_DSN and ASIDEKIT_REDIS_ADDR (or ASIDEKIT_REDIS_CLUSTER_ADDRS);
## writes out/bench/results.json and out/bench/report.md with its charts.
## BENCHFLAGS=-quick for the one-minute sizes.
BENCHFLAGS ?=
bench:
	@test -n "$$ASIDEKIT_POSTGRES_DSN" && test -n "$$ASIDEKIT_REDIS_ADDR$$ASIDEKIT_REDIS_CLUSTER_ADDRS" || \
		{ echo "bench: set ASIDEKIT_POSTGRES_DSN and ASIDEKIT_REDIS_ADDR (or ASIDEKIT_REDIS_CLUSTER_ADDRS)"; exit 2; }
	mkdir -p out/bench
	cd benchmarks && $(GO) run ./cmd/asidebench $(BENCHFLAGS) -json $(CURDIR)/out/bench/results.json -out $(CURDIR)/out/bench all

## peers: asidekit side by side with go-zero's cache, rockscache, jetcache-go
## and go-redis/cache (the separate module benchmarks/peers) on the real servers
## named by ASIDEKIT_POSTGRES_DSN and ASIDEKIT_REDIS_ADDR: prints the tables and
## writes out/peers/results.json and out/peers/results.md (see COMPARISON.md).
## PEERSFLAGS=-quick for a run of a few minutes.
PEERSFLAGS ?=
peers:
	@test -n "$$ASIDEKIT_POSTGRES_DSN" && test -n "$$ASIDEKIT_REDIS_ADDR" || \
		{ echo "peers: set ASIDEKIT_POSTGRES_DSN and ASIDEKIT_REDIS_ADDR"; exit 2; }
	mkdir -p out/peers
	cd benchmarks/peers && $(GO) run ./cmd/asidepeers $(PEERSFLAGS) -json $(CURDIR)/out/peers/results.json -md $(CURDIR)/out/peers/results.md

## pathcount: how many library functions, in how many files, one fully
## configured Repository.Update, a repository hit and a cacheaside hit run
## (counted from the coverage counters of a -cover build; see
## internal/cmd/pathcount), and their Redis round trips (the Update's after
## its COMMIT apart), on the servers named by ASIDEKIT_POSTGRES_DSN
## and ASIDEKIT_REDIS_ADDR. PATHCOUNTFLAGS=-v lists the functions.
PATHCOUNTFLAGS ?=
pathcount:
	$(GO) build -cover -covermode=atomic -coverpkg=./... -o $(BIN)/pathcount ./internal/cmd/pathcount
	@d=$$(mktemp -d); GOCOVERDIR=$$d $(BIN)/pathcount $(PATHCOUNTFLAGS); rc=$$?; rm -rf $$d; exit $$rc

## chaos: asidechaos (the module chaos/) on real servers: PostgreSQL named by
## ASIDEKIT_POSTGRES_DSN (it creates and drops a database of its own there)
## and private servers from PATH: two redis-server processes, a Redis
## Cluster (the failover phase), a PostgreSQL primary and streaming replica
## (the replica phase: initdb, pg_basebackup, postgres) and a PostgreSQL with
## wal_level=logical (the CDC phase: initdb, postgres). Four minutes of faults,
## about five in all; prints the table of checks and exits 1 on a violation,
## writing the failing history to out/chaos. CHAOSFLAGS=-ci for the
## one-minute CI version, CHAOSFLAGS='-seed N' to replay a run.
CHAOSFLAGS ?=
chaos:
	@test -n "$$ASIDEKIT_POSTGRES_DSN" || { echo "chaos: set ASIDEKIT_POSTGRES_DSN"; exit 2; }
	cd chaos && $(GO) run ./cmd/asidechaos -out $(CURDIR)/out/chaos $(CHAOSFLAGS)

## gobench: the packages' Go benchmarks (each against its baseline) on the
## real servers.
gobench:
	@status=0; for m in $(MODULES); do \
		(cd $$m && $(GO) test -run '^$$$$' -bench . -benchmem -timeout 30m ./...) || status=1; \
	done; exit $$status

## cover: tests with coverage; writes coverage.out and prints a summary.
cover:
	$(GO) test -race -count=1 -timeout 30m -coverprofile=coverage.out -covermode=atomic ./...
	$(GO) tool cover -func=coverage.out | tail -n 1

## lint: go vet and staticcheck at a pinned version, fetched on first use, on
## every module; gofmt on every tracked Go file.
lint: $(STATICCHECK)
	@status=0; for m in $(MODULES); do \
		(cd $$m && $(GO) vet ./... && $(STATICCHECK) ./...) || status=1; \
	done; exit $$status
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }

$(STATICCHECK):
	mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)
	mv $(BIN)/staticcheck $@
