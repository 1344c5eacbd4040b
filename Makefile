# make build        builds the example plugins into bin/
# make pipeline     runs the reference pipeline in real Conduit (built on the first
#                   run): its builtin generator → connkit's Postgres destination,
#                   into a throwaway PostgreSQL server, and prints what arrived;
#                   PIPELINE_FLAGS passes flags (-records, -batch-size, …)
# make devpipeline  a development tool: generator → log over the plugin protocol,
#                   with a host playing Conduit's part, and prints what flowed
# make test         runs every test, including end-to-end tests in real Conduit
# make race         runs the end-to-end tests RACE_RUNS times (default 20) under -race
# make bench        runs the benchmarks, a sweep of generator → log and the Postgres
#                   destination (schemas off and on) and source runs, connkit's
#                   plugins side by side with the incumbent's, and the batching
#                   experiment in real Conduit with its ceiling (about 30 minutes
#                   of it), the http destination against loopback servers
#                   answering in 20 ms (one serving any number, one refusing
#                   beyond 4, one queueing beyond 4 workers, one dropping
#                   connections), Postgres → Postgres in real Conduit, and a source's
#                   latency below capacity in each Conduit of BENCH_CONDUITS,
#                   into bench/results/
#
# CONDUIT_BIN names the Conduit that make test, make race and make bench run
# (default: v0.14.0, built on the first run); any release works, such as one
# built from its source repository. BENCH_CONDUITS, comma-separated, names
# the releases of the latency runs (default: CONDUIT_BIN alone).

GO              ?= go
CONDUIT_VERSION := v0.14.0
CACHE_DIR       ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/connkit
CONDUIT_BIN     ?= $(CACHE_DIR)/conduit-$(CONDUIT_VERSION)
INCUMBENT_BIN   ?= $(CACHE_DIR)/incumbent
BENCH_RECORDS   ?= 300000
RACE_RUNS       ?= 20
PIPELINE_FLAGS  ?=
BENCH_CONDUITS  ?= $(CONDUIT_BIN)
PLUGINS         := ./examples/generator/cmd/connkit-generator ./examples/log/cmd/connkit-log ./examples/postgres/cmd/connkit-postgres ./examples/jsonl/cmd/connkit-jsonl ./examples/file/cmd/connkit-file ./examples/http/cmd/connkit-http
# The packages whose tests launch plugin binaries or Conduit.
E2E_PKGS        := ./internal/e2e/... ./examples/... ./sdk/sdktest/...

# Some Conduit modules are not in the public checksum database.
export GONOSUMDB := github.com/conduitio,buf.build

.PHONY: build pipeline devpipeline test race check conduit incumbent bench clean

build:
	@echo "building connkit's plugins into bin/…"
	$(GO) build -o bin/ $(PLUGINS)

pipeline: build conduit
	$(GO) run ./internal/cmd/pipeline -conduit $(CONDUIT_BIN) -plugin bin/connkit-postgres $(PIPELINE_FLAGS)

devpipeline: build
	$(GO) run ./internal/cmd/devpipeline \
		-source bin/connkit-generator \
		-source-config format.type=structured \
		-source-config format.options.id=int \
		-source-config format.options.name=string \
		-source-config recordCount=5 \
		-destination bin/connkit-log \
		-records 5

# Conduit is built from the Go module proxy in a module of its own
# (internal/e2e/conduit) and cached between runs. The cache is shared by
# every checkout, and a checkout's files are newer than it, so the binary
# is built only when missing: it is named by its version, which changes with
# the pin in internal/e2e/conduit/go.mod. The same goes for the incumbent's
# plugins: remove $(INCUMBENT_BIN) when their pins in
# internal/e2e/incumbent/go.mod change.
conduit: $(CONDUIT_BIN)

$(CONDUIT_BIN):
	@echo "building Conduit $(CONDUIT_VERSION) (first run only, a few minutes)…"
	@mkdir -p $(dir $@)
	cd internal/e2e/conduit && $(GO) build -o $@.tmp github.com/conduitio/conduit/cmd/conduit
	mv $@.tmp $@

# The incumbent SDK's generator, log and postgres plugins, for side-by-side
# benchmarks, and its file plugin, for the file connector's checks in Conduit,
# pinned in a module of their own (internal/e2e/incumbent).
incumbent: $(INCUMBENT_BIN)/generator $(INCUMBENT_BIN)/log $(INCUMBENT_BIN)/postgres $(INCUMBENT_BIN)/file

$(INCUMBENT_BIN)/%:
	@echo "building the incumbent's $* plugin (first run only, a minute or two)…"
	@mkdir -p $(dir $@)
	cd internal/e2e/incumbent && $(GO) build -o $@ github.com/conduitio/conduit-connector-$*/cmd/connector

# Schemas off, for both sides of the runs that measure without them: a
# Postgres source's reading, not its Avro encoding. Elsewhere the settings
# stay at their defaults, as in production; the host serves a schema
# service to every plugin, as Conduit does.
NO_SCHEMA = sdk.schema.extract.key.enabled=false sdk.schema.extract.payload.enabled=false

bench: build conduit incumbent
	$(GO) test -run '^$$' -bench . ./batcher ./internal/plugin ./internal/wire ./examples/generator ./middleware ./internal/schema
	$(GO) run ./internal/cmd/bench sweep -out bench/results -records $(BENCH_RECORDS) \
		-destination-config level=trace -vs-destination-config level=trace \
		-vs-source $(INCUMBENT_BIN)/generator -vs-destination $(INCUMBENT_BIN)/log
	$(GO) run ./internal/cmd/bench postgres -out bench/results -records $(BENCH_RECORDS) -schemas off,on \
		-vs-plugin $(INCUMBENT_BIN)/postgres
	$(GO) run ./internal/cmd/bench postgres -out bench/results -records $(BENCH_RECORDS) -schemas off,on \
		-operation update -vs-plugin $(INCUMBENT_BIN)/postgres
	$(GO) run ./internal/cmd/bench postgres -out bench/results -records $(BENCH_RECORDS) -schemas off -keyless \
		-vs-plugin $(INCUMBENT_BIN)/postgres
	$(GO) run ./internal/cmd/bench pgsource -out bench/results -records 200000 -changes 200000 \
		-vs-plugin $(INCUMBENT_BIN)/postgres $(foreach kv,$(NO_SCHEMA),-config $(kv) -vs-config $(kv))
	$(GO) run ./internal/cmd/bench conduit -out bench/results -conduit $(CONDUIT_BIN) \
		-vs-plugin $(INCUMBENT_BIN)/postgres
	$(GO) run ./internal/cmd/bench conduit -out bench/results/rate500 -conduit $(CONDUIT_BIN) \
		-vs-plugin $(INCUMBENT_BIN)/postgres -engines default -batch-sizes 1,10,100,1000,0 -rate 500 -ceiling=false -idle-rate 0
	$(GO) run ./internal/cmd/bench http -out bench/results -conduit $(CONDUIT_BIN)
	$(GO) run ./internal/cmd/bench acks -out bench/results
	$(GO) run ./internal/cmd/bench replicate -out bench/results -conduit $(CONDUIT_BIN) \
		-vs-plugin $(INCUMBENT_BIN)/postgres
	$(GO) run ./internal/cmd/bench latency -out bench/results -conduit $(BENCH_CONDUITS) \
		-vs-generator $(INCUMBENT_BIN)/generator -vs-postgres $(INCUMBENT_BIN)/postgres

check:
	@echo "checking gofmt and go vet…"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: check build conduit incumbent
	@echo "running every test under -race (the first run compiles for a few minutes)…"
	CONNKIT_BIN=$(CURDIR)/bin CONDUIT_BIN=$(CONDUIT_BIN) INCUMBENT_BIN=$(INCUMBENT_BIN) $(GO) test -race -count=1 -timeout 45m ./...

# Each run is a fresh test process, as in make test, so that what fails one
# run in twenty (a race, a flaky start) shows up here first.
race: build conduit incumbent
	@for i in $$(seq $(RACE_RUNS)); do \
		echo "race run $$i of $(RACE_RUNS)"; \
		CONNKIT_BIN=$(CURDIR)/bin CONDUIT_BIN=$(CONDUIT_BIN) INCUMBENT_BIN=$(INCUMBENT_BIN) $(GO) test -race -count=1 -timeout 45m $(E2E_PKGS) || exit 1; \
	done

clean:
	rm -rf bin
