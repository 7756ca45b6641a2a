# urlcheck — common tasks. `make help` lists them.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/urlcheck/urlcheck/pkg/check.Version=$(VERSION)
FUZZTIME ?= 100000x

.PHONY: help build run test test-aws local fuzz bench demo vet fmt clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/urlcheck
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/urlcheck ./cmd/urlcheck

run: ## check examples/urls.txt
	$(GO) run ./cmd/urlcheck run examples/urls.txt

test: vet sfn-deps ## the whole suite: gofmt, vet, unit + integration tests (race detector) against local AWS servers it installs and starts, the serverless end-to-end and fault tests, the report in headless Chromium, short fuzz runs
	chromium=$$(infra/local/chromium.sh install) && export URLCHECK_CHROMIUM=$$chromium && \
	infra/local/with-servers.sh sh -c '$(GO) test -race -short -count=1 ./... && $(GO) test -count=1 -timeout 15m ./pkg/pipeline/local/ ./pkg/report/'
	$(MAKE) fuzz

test-aws: sfn-deps ## only the tests against the local AWS servers (adapters, job table, event sources, serverless pipeline)
	infra/local/with-servers.sh $(GO) test -count=1 -timeout 15m ./pkg/bucket/dynamostore/ ./pkg/queue/sqsqueue/ ./pkg/results/s3store/ ./pkg/jobs/ ./pkg/eventsource/ ./pkg/awscalls/ ./pkg/awsfault/ ./pkg/pipeline/... ./pkg/scan/ ./infra/

local: ## run the serverless pipeline on this machine against local AWS servers: a simulated list through POST /jobs and the drop folder
	infra/local/with-servers.sh $(GO) run ./cmd/urlcheck serve -addr 127.0.0.1:8080 -simulate 2000 -once

fuzz: ## run each fuzz target for FUZZTIME (default 100000x: a count, not a time, so the run cannot end mid-input)
	@set -e; for spec in \
		./pkg/urlnorm:FuzzNormalize \
		./pkg/urlnorm:FuzzParseOverrides \
		./pkg/urllist:FuzzRead \
		./pkg/backoff:FuzzParseRetryAfter \
		./pkg/check:FuzzResolveLocation \
		./pkg/check:FuzzParseTarget \
		./pkg/groups:FuzzDecode \
		./pkg/pipeline:FuzzDecodePart \
		./pkg/pipeline:FuzzJobForKey; do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

bench: ## politeness, speed and serverless cost figures (makespan ratio, 429 share, URLs/s, RSS, parse+split, AWS calls and $ per URL)
	infra/local/with-servers.sh $(GO) run ./cmd/urlbench

demo: ## watch throttling work against a simulated web on loopback (no internet needed)
	$(GO) run ./cmd/urlcheck demo

vet: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean: ## remove build and run outputs
	rm -rf bin out

# --- AWS SAM build targets (merge into /work/main/Makefile) -------------------
# `sam build` (template.yaml: Metadata BuildMethod makefile, ContextPath and
# ProjectRootDirectory ".") runs `make build-<LogicalId>` at the repository
# root with ARTIFACTS_DIR set to the function's output directory; Lambda's
# provided.al2023 runtime on arm64 runs the executable named bootstrap.
# LDFLAGS is the one defined at the top of this Makefile.
LAMBDA_GOFLAGS := GOOS=linux GOARCH=arm64 CGO_ENABLED=0

.PHONY: build-ApiFunction build-IngestFunction build-CheckerFunction build-ScanFunction sam-build sam-validate sfn-deps

build-ApiFunction:
	$(LAMBDA_GOFLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/api

build-IngestFunction:
	$(LAMBDA_GOFLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/ingest

build-CheckerFunction:
	$(LAMBDA_GOFLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/checker

sam-build: ## build the Lambda functions with AWS SAM (needs the sam CLI)
	sam build

sam-validate: ## lint template.yaml with AWS SAM (needs the sam CLI)
	sam validate --lint

build-ScanFunction:
	$(LAMBDA_GOFLAGS) $(GO) build -tags lambda.norpc -trimpath -ldflags '$(LDFLAGS)' -o $(ARTIFACTS_DIR)/bootstrap ./functions/scan

# The Node harness of infra/scan_test.go (asl-validator + aws-local-stepfunctions, exact
# versions in infra/local/sfn/package.json; --before pins transitive dependencies like
# infra/local/emu.sh does; no lock file is kept).
SFN_NPM_BEFORE ?= 2026-11-23T00:00:00Z
sfn-deps: ## install the Step Functions test harness (infra/local/sfn/node_modules)
	@test -f infra/local/sfn/node_modules/aws-local-stepfunctions/package.json && \
	 test -f infra/local/sfn/node_modules/asl-validator/package.json || \
	 npm install --prefix infra/local/sfn --no-audit --no-fund --no-package-lock --loglevel=error \
		--before=$(SFN_NPM_BEFORE)
