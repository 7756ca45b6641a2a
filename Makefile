# urlcheck — common tasks. `make help` lists them.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/urlcheck/urlcheck/pkg/check.Version=$(VERSION)
FUZZTIME ?= 100000x

.PHONY: help build run test test-aws fuzz bench demo vet fmt clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/urlcheck
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/urlcheck ./cmd/urlcheck

run: ## check examples/urls.txt
	$(GO) run ./cmd/urlcheck run examples/urls.txt

test: vet ## the whole test suite: gofmt, vet, unit + integration tests (race detector), short fuzz runs
	$(GO) test -race -count=1 ./...
	$(MAKE) fuzz

test-aws: ## tests against local AWS-compatible servers (installs and starts them; serverless work in progress)
	infra/local/emu.sh install
	infra/local/emu.sh start
	eval "$$(infra/local/emu.sh env)" && $(GO) test -race -count=1 ./pkg/bucket/dynamostore/ ./pkg/queue/sqsqueue/ ./pkg/results/s3store/; rc=$$?; infra/local/emu.sh stop; exit $$rc

fuzz: ## run each fuzz target for FUZZTIME (default 100000x: a count, not a time, so the run cannot end mid-input)
	@set -e; for spec in \
		./pkg/urlnorm:FuzzNormalize \
		./pkg/urlnorm:FuzzParseOverrides \
		./pkg/urllist:FuzzRead \
		./pkg/backoff:FuzzParseRetryAfter \
		./pkg/check:FuzzResolveLocation \
		./pkg/check:FuzzParseTarget \
		./pkg/groups:FuzzDecode; do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

bench: ## politeness and speed figures (makespan ratio, 429 share, URLs/s, RSS, parse+split)
	$(GO) run ./cmd/urlbench

demo: ## watch throttling work against a simulated web on loopback (no internet needed)
	$(GO) run ./cmd/urlcheck demo

vet: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean: ## remove build and run outputs
	rm -rf bin out
