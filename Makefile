# trainscope — the two set-up commands are `make demo` and `make test`.
GO        ?= go
TAGS      := duckdb_arrow
BIN       := bin/trainscope
GOFLAGS   ?=
PKGS      := ./...
DEMO_DIR  := bench/sample
DEMO_OUT  := out/demo

.PHONY: help build test test-short bench demo demo-offline lint fmt golden vet fuzz clean

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-17s %s\n", $$1, $$2}'

build: ## build bin/trainscope
	$(GO) build -tags $(TAGS) -o $(BIN) .

test: ## run every test: the Go module, then the Grafana plugin (Go + frontend typecheck)
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(GO) test -tags $(TAGS) -count=1 $(PKGS)
	$(MAKE) plugin-test plugin-typecheck

test-short: ## quick tests only
	$(GO) test -tags $(TAGS) -short $(PKGS)

bench: build ## Go benchmarks and the syn8 end-to-end benchmark (see bench/RESULTS.md)
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem ./ingest/... ./detectors/...
	bash bench/syn8.sh

demo: build ## serve + publish the bundled sample run, wait for its report, print it, stop (deploy/demo.sh)
	BIN=$(BIN) OUT=$(DEMO_OUT) SAMPLE=$(DEMO_DIR) bash deploy/demo.sh

demo-offline: build ## the same run through analyze, no server: report, database and Parquet
	@mkdir -p $(DEMO_OUT)-offline
	@rm -f $(DEMO_OUT)-offline/run.duckdb $(DEMO_OUT)-offline/run.duckdb.wal
	$(BIN) analyze $(DEMO_DIR) --run demo --db $(DEMO_OUT)-offline/run.duckdb --out $(DEMO_OUT)-offline/report.md --parquet $(DEMO_OUT)-offline/parquet
	@echo "report: $(DEMO_OUT)-offline/report.md; database: $(DEMO_OUT)-offline/run.duckdb"

lint: vet ## gofmt check and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet -tags $(TAGS) $(PKGS)

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

golden: ## rewrite golden report files after an intended change
	$(GO) test -tags $(TAGS) ./detectors/ -run Golden -update
	$(GO) test -tags $(TAGS) . -run ReadmeDetectorTable -update

fuzz: ## fuzz the readers of outside input (traces, Nsight exports, snapshots, launch scripts, SQL checker) for a minute each
	$(GO) test -tags $(TAGS) ./ingest/kineto -run '^$$' -fuzz FuzzKineto -fuzztime 60s
	$(GO) test -tags $(TAGS) ./ingest/nsys -run '^$$' -fuzz FuzzNsys -fuzztime 60s
	$(GO) test -tags $(TAGS) ./ingest/memsnap -run '^$$' -fuzz FuzzMemsnap -fuzztime 60s
	$(GO) test -tags $(TAGS) ./ingest/script -run '^$$' -fuzz FuzzScript -fuzztime 60s
	$(GO) test -tags $(TAGS) ./sql/flightsrv -run '^$$' -fuzz FuzzCheckReadOnly -fuzztime 60s
	$(GO) test -tags $(TAGS) ./detectors -run '^$$' -fuzz FuzzMarkdownToHTML -fuzztime 30s

clean:
	rm -rf bin out grafana-plugin/dist

include grafana-plugin/Makefile.plugin
include bench/accuracy/Makefile.accuracy
