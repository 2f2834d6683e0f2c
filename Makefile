# trainscope — the two set-up commands are `make demo` and `make test`.
GO        ?= go
TAGS      := duckdb_arrow
BIN       := bin/trainscope
GOFLAGS   ?=
PKGS      := ./...
# go-nvml's cgo bindings name every NVML call, deprecated ones included, so
# gcc warns about each (~60 lines of "is deprecated") on a cold build; they
# are harmless (the sampler calls none of them), so the build silences them.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
DEMO_DIR  := bench/sample
DEMO_OUT  := out/demo

.PHONY: help build test test-short bench goals demo demo-offline lint fmt golden dashboards vet fuzz clean

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-17s %s\n", $$1, $$2}'

build: ## build bin/trainscope
	$(GO) build -tags $(TAGS) -o $(BIN) .

test: ## run every test: the Go module, then the Grafana plugin (Go, frontend typecheck, Jest, ESLint, zip checker)
	$(GO) vet -tags $(TAGS) $(PKGS)
	@mkdir -p out && rm -f out/corpus-checks.log
	TRAINSCOPE_CORPUS_LOG=$(CURDIR)/out/corpus-checks.log $(GO) test -tags $(TAGS) -count=1 -timeout 30m $(PKGS)
	@awk '$$1 == "ran" { ran++; files[$$2] = 1 } $$1 == "skip" { skip++; gone[$$2] = 1 } \
		END { n = 0; for (f in files) n++; m = 0; for (g in gone) { m++; list = list " " g }; \
		printf "corpus checks: %d ran over %d real inputs; %d skipped for %d input(s) not in the repository:%s\n", ran, n, skip, m, (m ? list : " none") }' \
		out/corpus-checks.log
	$(MAKE) plugin-test plugin-typecheck plugin-jest plugin-eslint plugin-zip-test

test-short: ## quick tests only
	$(GO) test -tags $(TAGS) -short $(PKGS)

bench: build ## Go benchmarks and the syn8 end-to-end benchmark (see bench/RESULTS.md)
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem ./ingest/... ./detectors/...
	bash bench/syn8.sh

goals: ## the speed and memory goals in one sitting, side by side with HTA, as a table (bench/goals.sh; RUNS=N, BIG=1)
	bash bench/goals.sh

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
	$(GO) test -tags $(TAGS) ./detectors/ -run 'Golden|DetectorsReadme|ThrottledFixture' -update
	$(GO) test -tags $(TAGS) . -run ReadmeDetectorTable -update

dashboards: ## regenerate deploy/grafana/dashboards from deploy/grafana/dashgen
	$(GO) run ./deploy/grafana/dashgen -out deploy/grafana/dashboards

# Each fuzz target runs FUZZTIME (make fuzz FUZZTIME=10m; make -j2 fuzz runs
# two at a time). One worker with one P per target: on these 2-core VMs the
# Go fuzz coordinator hears from busy workers only in bursts, and not at all
# for minutes when a worker's runtime has two Ps.
FUZZTIME ?= 60s
FUZZ_TARGETS := ingest/kineto:FuzzKineto ingest/nsys:FuzzNsys ingest/memsnap:FuzzMemsnap ingest/script:FuzzScript \
	sql/flightsrv:FuzzCheckReadOnly detectors/report/html:FuzzHTMLPage stream/transport:FuzzDecode ingest:FuzzConsume ingest/dcgm:FuzzRead \
	ingest/ncu:FuzzNCU gpu:FuzzOpCost internal/ondemand:FuzzDatagram internal/ondemand:FuzzEnviron internal/ondemand:FuzzTrigger \
	ingest/memsnap:FuzzSniffPrecheck ingest:FuzzReadFile

fuzz: $(foreach t,$(FUZZ_TARGETS),$(word 2,$(subst :, ,$(t)))) ## fuzz every reader of outside input (traces, Nsight Systems and Compute exports, snapshots, scripts, dcgm scrapes, recorded operator shapes, wire messages through the consumer, the SQL checker, the Kineto daemon's datagrams, process environments and trigger messages), FUZZTIME each

define fuzz_rule
.PHONY: $(2)
$(2):
	GOMAXPROCS=1 $$(GO) test -tags $$(TAGS) ./$(1) -run '^$$$$' -fuzz '^$(2)$$$$' -fuzztime $$(FUZZTIME) -parallel 1
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(word 1,$(subst :, ,$(t))),$(word 2,$(subst :, ,$(t))))))

clean:
	rm -rf bin out grafana-plugin/dist

include grafana-plugin/Makefile.plugin
include bench/accuracy/Makefile.accuracy
