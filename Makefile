# Tide monorepo. `go test ./...` does not work at a go.work root, so the
# targets below loop over the workspace modules.
SHELL := /bin/bash
GO    ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
MODULES = $(shell $(GO) list -m -f '{{.Dir}}' 2>/dev/null)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
BIN   := $(CURDIR)/bin

.DEFAULT_GOAL := help

.PHONY: help
help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build every daemon and tool into bin/
	@mkdir -p $(BIN)
	@for d in $$(find . -path ./e2e -prune -o -path '*/cmd/*' -name main.go -print | xargs -n1 dirname | sort); do \
		mod=$$(cd $$d && $(GO) list -m -f '{{.Dir}}'); \
		echo "build $$d"; \
		(cd $$d && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.Version=$(VERSION)" -o $(BIN)/$$(basename $$d) .) || exit 1; \
	done

# The pattern suites and the examples run a second time against brokers
# without Tide extensions (TIDE_BROKER_EXTENSIONS=off: as Apache RocketMQ
# 4.9 behaves), so that what docs/adopting.md says about portability holds.
PLAIN_PACKAGES = $(addprefix github.com/tidemq/tide/pkg/mqclient/,txmsg idempotent ordered delay kratosmq) \
	$(addprefix github.com/tidemq/tide/examples/,outbox ledger ordered deadline)

.PHONY: test
test: ## run the unit and integration tests of every module, then the patterns without Tide extensions (what CI runs)
	@PLAIN_PACKAGES="$(PLAIN_PACKAGES)" scripts/test.sh $(MODULES)

.PHONY: race
race: ## run the race detector on the transport, the store and the broker
	@for m in pkg/remoting broker; do (cd $$m && $(GO) test -race -short -count=1 ./...) || exit 1; done

.PHONY: vet
vet: ## go vet every module
	@for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

.PHONY: fmt-check
fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: tidy
tidy: ## go mod tidy every module, then go work sync
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy) || exit 1; done; $(GO) work sync

.PHONY: cluster-test
cluster-test: ## run the multi-process replication and failover tests (broker/clustertest, controller/failovertest; a few minutes)
	@cd broker && $(GO) test -tags cluster -count=1 -timeout 15m ./clustertest/
	@cd controller/failovertest && $(GO) test -tags cluster -count=1 -timeout 15m .

.PHONY: chaos
chaos: ## randomized fault campaign + history checker, as root (SEED=1 DURATION=5m MODE=masterslave|controller DRAIN=2m; docs/reliability.md)
	@mkdir -p $(BIN)
	@cd tools/chaos && $(GO) build -o $(BIN)/chaos ./cmd/chaos
	@$(BIN)/chaos -root $(CURDIR) -seed $(or $(SEED),1) -duration $(or $(DURATION),5m) -mode $(or $(MODE),masterslave) -drain $(or $(DRAIN),2m)

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 30s)
	@scripts/fuzz.sh $${FUZZTIME:-30s}

.PHONY: bench
bench: ## run the Go benchmarks of the codec, transport and store
	@for m in pkg/remoting broker; do (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...) || exit 1; done

.PHONY: bench-compare
bench-compare: ## compare Tide (with pkg/mqclient and with the official client) with NATS JetStream and Redis Streams on loopback, write docs/benchmarks/ (QUICK=1: ~4.5 min; full ~16 min; not CI)
	@scripts/bench-compare.sh $(if $(QUICK),--quick)

.PHONY: generate-headers
generate-headers: ## regenerate pkg/remoting/protocol/headers_gen.go (the header codecs) from the rmq struct tags (internal/headergen)
	@echo "headergen pkg/remoting/protocol"; cd pkg/remoting && $(GO) generate ./protocol/

.PHONY: generate
generate: generate-headers ## regenerate the header codecs, protobuf/gRPC code (protoc), wire_gen.go files and recorded client frames (FRAMES=0 skips frames)
	@command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler"; exit 1; }
	@gengo=$$($(GO) tool -n protoc-gen-go) && gengrpc=$$($(GO) tool -n protoc-gen-go-grpc) || exit 1; \
	for root in api $$(ls -d services/*/ 2>/dev/null); do \
		[ -d $$root ] || continue; \
		protos=$$(cd $$root && find . -name '*.proto' -not -path './third_party/*' | sed 's|^\./||' | sort); \
		[ -n "$$protos" ] || continue; \
		echo "protoc $$root"; \
		(cd $$root && protoc -I . -I $(CURDIR)/services/kit -I /usr/include --plugin=protoc-gen-go=$$gengo --plugin=protoc-gen-go-grpc=$$gengrpc \
			--go_out=paths=source_relative:. --go-grpc_out=paths=source_relative:. $$protos) || exit 1; \
	done
	@for d in $$(ls -d services/*/cmd/*/ 2>/dev/null); do \
		[ -f $$d/wire.go ] || continue; echo "wire $$d"; (cd $$d && $(GO) tool wire gen .) || exit 1; \
	done
	@if [ "$(FRAMES)" != 0 ]; then cd tools/framerecord && $(GO) run . -out ../../pkg/remoting/protocol/testdata/client-v2.1.2; fi

.PHONY: generate-check
generate-check: ## fail if make generate would change committed header codecs, protobuf, gRPC or wire code
	@$(MAKE) --no-print-directory generate FRAMES=0
	@out=$$(git status --porcelain --untracked-files=all -- '*.pb.go' '*wire_gen.go' pkg/remoting/protocol/headers_gen.go); \
	if [ -n "$$out" ]; then echo "generated code is stale (run make generate and commit):"; echo "$$out"; exit 1; fi

.PHONY: images
images: ## build every image with no registry: base rootfs, MariaDB, Redis (FORCE=1 rebuilds) and our daemons (deploy/images/README.md)
	@deploy/images/bootstrap.sh $(if $(FORCE),-f) && deploy/images/build-apps.sh

.PHONY: e2e
e2e: ## run the end-to-end suite: the whole system in containers (testcontainers-go, local images; e2e/README.md)
	@cd e2e && TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 \
		$(GO) test -count=1 -timeout 30m -v $(if $(RUN),-run '$(RUN)') ./...

.PHONY: up
up: ## start the demo stack with docker compose (controller mode; PROFILE=2m2s: 4.x master/slave): images built when missing, waits until healthy, prints the URLs
	@deploy/compose/up.sh

.PHONY: down
down: ## stop the demo stack (VOLUMES=1 also deletes its data)
	@deploy/compose/down.sh

.PHONY: ps
ps: ## the demo stack's containers and their health
	@deploy/compose/compose.sh ps

.PHONY: logs
logs: ## the demo stack's recent logs (SERVICE=order for one service)
	@deploy/compose/compose.sh logs --tail=200 $(SERVICE)

.PHONY: mqadmin
mqadmin: ## build bin/mqadmin only (make build builds every tool)
	@mkdir -p $(BIN) && cd tools/mqadmin/cmd/mqadmin && CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/mqadmin . && echo "built bin/mqadmin"

.PHONY: demo
demo: ## run the e2e scenarios against the running `make up` stack with curl and explain each step
	@scripts/demo.sh $(SCENARIO)

.PHONY: clean
clean: ## remove build output
	rm -rf $(BIN)
