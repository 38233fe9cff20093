# asidekit — common tasks. `make test` is what CI runs (after .ci/run has
# made sure PostgreSQL and Redis answer); `make demo` needs no server at all.

GO              ?= go
STATICCHECK_VER := v0.8.2
BIN             := $(CURDIR)/.bin
STATICCHECK     := $(BIN)/staticcheck-$(STATICCHECK_VER)

.PHONY: all test demo bench cover lint fmt

all: lint test

## test: every test with the race detector, against the backends that
## testcontainers finds (environment, Docker, or binaries on PATH).
test:
	$(GO) test -race -count=1 -timeout 30m ./...

## demo: the main job on the embedded backend (in-process miniredis + SQLite).
demo:
	$(GO) run ./examples/quickstart

## bench: Go benchmarks against the real servers.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

## cover: tests with coverage; writes coverage.out and prints a summary.
cover:
	$(GO) test -race -count=1 -timeout 30m -coverprofile=coverage.out -covermode=atomic ./...
	$(GO) tool cover -func=coverage.out | tail -n 1

## lint: go vet and staticcheck at a pinned version, fetched on first use.
lint: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }

$(STATICCHECK):
	mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)
	mv $(BIN)/staticcheck $@
