# trainscope — the two set-up commands are `make demo` and `make test`.
GO        ?= go
TAGS      := duckdb_arrow
BIN       := bin/trainscope
GOFLAGS   ?=
PKGS      := ./...
DEMO_DIR  := bench/sample
DEMO_OUT  := out/demo

.PHONY: help build test test-short bench demo lint fmt golden vet fuzz clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/trainscope
	$(GO) build -tags $(TAGS) -o $(BIN) .

test: ## run every test (corpus loads, detectors, golden reports, error cases)
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(GO) test -tags $(TAGS) -count=1 $(PKGS)

test-short: ## quick tests only
	$(GO) test -tags $(TAGS) -short $(PKGS)

bench: build ## Go benchmarks and the syn8 end-to-end benchmark (see bench/RESULTS.md)
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem ./ingest/... ./detectors/...
	bash bench/syn8.sh

demo: build ## analyze the bundled sample run and write a report and a database
	@mkdir -p $(DEMO_OUT)
	@rm -f $(DEMO_OUT)/run.duckdb $(DEMO_OUT)/run.duckdb.wal
	$(BIN) analyze $(DEMO_DIR) --run demo --db $(DEMO_OUT)/run.duckdb --out $(DEMO_OUT)/report.md --parquet $(DEMO_OUT)/parquet
	@echo
	@sed -n '/^## Summary/,/^## Metrics/p' $(DEMO_OUT)/report.md | sed '$$d'
	@$(BIN) sql --db $(DEMO_OUT)/run.duckdb "SELECT severity, detector, rank, round(value, 3) AS value, threshold FROM findings ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 ELSE 2 END, detector, rank"
	@echo
	@echo "full report: $(DEMO_OUT)/report.md"
	@echo "database:    $(DEMO_OUT)/run.duckdb"
	@echo "parquet:     $(DEMO_OUT)/parquet"
	@echo "query it:    $(BIN) sql --db $(DEMO_OUT)/run.duckdb \"SELECT * FROM metrics WHERE detector = 'temporal_breakdown'\""

lint: vet ## gofmt check and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet -tags $(TAGS) $(PKGS)

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

golden: ## rewrite golden report files after an intended change
	$(GO) test -tags $(TAGS) ./detectors/ -run Golden -update
	$(GO) test -tags $(TAGS) . -run ReadmeDetectorTable -update

fuzz: ## fuzz the Kineto and memory-snapshot readers for a minute each
	$(GO) test -tags $(TAGS) ./ingest/kineto -run '^$$' -fuzz FuzzKineto -fuzztime 60s
	$(GO) test -tags $(TAGS) ./ingest/memsnap -run '^$$' -fuzz FuzzMemsnap -fuzztime 60s

clean:
	rm -rf bin out
