# Weir — the commands a person and CI use. See README.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

MODULES := proto routing natsconf listen tracing migrations db web controlplane edge systest
# Code generators are pinned by the tool directives of tools/go.mod and run
# through `go tool` in their own workspace, so they never change the versions
# the product modules build with.
TOOLS := GOWORK=$(CURDIR)/tools/go.work go tool
GO_TEST_FLAGS ?= -count=1
GO_TEST_TIMEOUT ?= 20m

PHONY_EXTRA := run-standalone
.PHONY: all build test lint vet generate generate-proto generate-sqlc generate-templ \
	check-generate buf-lint buf-breaking tidy run bench sim pg-dsn

all: build

build:
	@for m in $(MODULES); do echo "== build $$m"; (cd $$m && go build ./...); done

## test: every module's tests (`make test MODULES="web edge"` for some), against
## a real Postgres (see db/pgserver), read by gotestsum (pinned in tools/go.mod):
## a line per package, then a summary of the skipped tests with their reasons
## and of the failed ones with their whole output, ending in "DONE N tests".
## The status is non-zero when a test, a build or a module's `go test` fails.
test:
	@export DATABASE_URL="$${DATABASE_URL:-$$(cd db && go run ./cmd/weir-pg ensure)}"; \
	gotestsum=$$($(TOOLS) -n gotestsum); \
	{ fail=0; for m in $(MODULES); do echo "== test $$m" >&2; \
	    (cd $$m && go test -json $(GO_TEST_FLAGS) -timeout $(GO_TEST_TIMEOUT) ./...) || fail=1; done; \
	  exit $$fail; } | "$$gotestsum" --format pkgname --format-icons text --format-hide-empty-pkg --raw-command -- cat

vet:
	@for m in $(MODULES); do echo "== vet $$m"; (cd $$m && go vet ./...); done

lint: vet buf-lint
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

buf-lint:
	$(TOOLS) buf lint

## buf-breaking: compares the protos with main's last commit (nothing to compare on the first).
buf-breaking:
	@if git rev-parse -q --verify main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
	  $(TOOLS) buf breaking --against '.git#branch=main'; else echo "buf-breaking: no earlier protos on main"; fi

generate: generate-proto generate-sqlc generate-templ

generate-proto:
	rm -rf proto/gen/weir
	$(TOOLS) buf generate

generate-sqlc:
	$(TOOLS) sqlc generate -f sqlc.yaml

generate-templ:
	$(TOOLS) templ generate -path web

## check-generate: regenerates into a scratch copy and fails when any committed
## generated file differs (or is missing, or is left over).
check-generate:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$$tmp" 2>/dev/null || true; \
	(cd "$$tmp" && find proto/gen db/sqlc -name '*.go' -delete 2>/dev/null; find web -name '*_templ.go' -delete; \
	  $(MAKE) --no-print-directory -s generate TOOLS="GOWORK=$$tmp/tools/go.work go tool" >/dev/null); \
	status=0; for d in proto/gen db/sqlc web; do \
	  diff -r -q -x '*.templ' -x '*.css' -x '*.js' "$$d" "$$tmp/$$d" >/dev/null 2>&1 || { echo "stale generated code under $$d:"; diff -r -q "$$d" "$$tmp/$$d" || true; status=1; }; done; \
	if [ $$status -eq 0 ]; then echo "check-generate: generated code is current"; fi; exit $$status

.PHONY: docs check-docs

## docs: writes docs/cli.md from the weir CLI's own command table (every command
## and flag, as `weir COMMAND -h` prints them).
docs:
	cd controlplane && go run ./cmd/weir-docs -o ../docs/cli.md

## check-docs: fails when docs/cli.md differs from a fresh generation.
check-docs:
	@tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	(cd controlplane && go run ./cmd/weir-docs -o "$$tmp"); \
	if diff -u docs/cli.md "$$tmp"; then echo "check-docs: docs/cli.md is current"; \
	else echo "docs/cli.md is stale: run make docs"; exit 1; fi

tidy:
	@for m in $(MODULES); do (cd $$m && go mod tidy); done

## run: the whole system on this machine: control plane (embedded NATS,
## Postgres via db/cmd/weir-pg), two edges and a fake provider pool, with a
## demo tenant seeded through the weir CLI.
run:
	@scripts/run.sh

## run-standalone: one edge from examples/standalone.json and two fake deployments.
run-standalone:
	@scripts/run-standalone.sh

pg-dsn:
	@cd db && go run ./cmd/weir-pg ensure

sim:
	cd edge && go run ./cmd/weir-sim

## bench: usage ingest into Postgres (records/s; needs a Postgres like
## `make test`), an edge's cold start with 10,000 tenants in WEIR_CONFIG, the gateway's Go benchmarks (ns/op, B/op, allocs/op against a bare
## httputil.ReverseProxy), then weir-bench's side-by-side load run of the edge
## and a bare reverse proxy on loopback (≤ 5 minutes; BENCH_FLAGS=-quick for a
## smoke run). The table is also written to edge/var/bench.md.
bench:
	cd controlplane && go test -run '^$$' -bench UsageIngest -benchtime 40000x -count=1 ./internal/distrib
	cd edge && go test -run '^$$' -bench ColdStart -benchtime 1x -count=1 ./internal/distrib
	cd edge && go test -run '^$$' -bench . -benchmem -count=1 ./internal/gateway
	cd edge && go build -o var/bin/ ./cmd/edge ./cmd/fakeprovider ./cmd/weir-bench
	cd edge && var/bin/weir-bench -edge var/bin/edge -fake var/bin/fakeprovider -self var/bin/weir-bench -out var/bench.md $(BENCH_FLAGS)
