# eni-operator — run `make help` for the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       := bin
# Test packages run two at a time: each integration package starts its own
# control plane (~310 MiB), and the CI machines have 2 cores.
TEST_P    ?= 2
TEST_ARGS ?=
EMULATOR_LISTEN ?= 127.0.0.1:4566
CHART     := charts/eni-operator
DEMO_ARGS ?=
# promtool (Prometheus' rule checker) for the monitoring tests, as the Go
# module version of github.com/prometheus/prometheus (v0.316.0: Prometheus
# 3.16.0); hack/promtool-binary.sh defaults to the same (a test checks).
PROMTOOL_VERSION ?= 0.316.0
# golangci-lint (v2) for make lint, built from the Go module proxy;
# hack/golangci-lint-binary.sh defaults to the same (a test checks). The
# rules are in .golangci.yml.
GOLANGCI_LINT_VERSION ?= 2.15.0

.PHONY: help
help: ## list the targets (coloured on a terminal only)
	@if [ -t 1 ]; then on='\033[36m'; off='\033[0m'; else on=; off=; fi; \
	awk -v on="$$on" -v off="$$off" 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %s%-16s%s %s\n", on, $$1, off, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build every binary into bin/
	$(GO) build -o $(BIN)/ ./cmd/...

# make image: the images without a container runtime (hack/image; the
# Dockerfile builds the same for those with one). VERSION is the tag and
# the binaries' --version; release with VERSION=v0.1.0 (the chart's
# appVersion).
VERSION          ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_REPO       ?= ghcr.io/eni-operator/eni-operator
IMAGE_AGENT_REPO ?= ghcr.io/eni-operator/eni-agent
IMAGE_ARCHS      ?= amd64
IMAGE_DIR        ?= $(BIN)

.PHONY: image
image: ## images without a container runtime: bin/eni-operator-image.tar (both binaries) and bin/eni-agent-image.tar; VERSION=v0.1.0 IMAGE_REPO=... IMAGE_ARCHS="amd64 arm64"
	$(GO) run ./hack/image --version '$(VERSION)' --repository '$(IMAGE_REPO)' --agent-repository '$(IMAGE_AGENT_REPO)' --arch '$(IMAGE_ARCHS)' --out '$(IMAGE_DIR)'

.PHONY: control-plane
control-plane: ## build (once) and cache kube-apiserver, etcd and kubectl for tests
	@hack/control-plane-binaries.sh >/dev/null

.PHONY: helm
helm: ## build (once) and cache helm for the chart tests (hack/helm-binary.sh prints its path)
	@hack/helm-binary.sh >/dev/null

.PHONY: promtool
promtool: ## build (once) and cache promtool for the alerting-rule tests (hack/promtool-binary.sh prints its path)
	@PROMTOOL_VERSION=$(PROMTOOL_VERSION) hack/promtool-binary.sh >/dev/null

.PHONY: golangci-lint
golangci-lint: ## build (once) and cache golangci-lint for make lint (hack/golangci-lint-binary.sh prints its path)
	@GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/golangci-lint-binary.sh >/dev/null

.PHONY: generate
generate: ## regenerate deepcopy code of api/ (controller-gen)
	$(GO) tool controller-gen object paths=./api/...

# The operator's role is generated from the operator's packages only, so
# the node agent's markers (internal/agent) land in the agent's own role
# (config/agent) and not in the operator's; a new operator package with
# RBAC markers goes into OPERATOR_RBAC_PATHS.
OPERATOR_RBAC_PATHS := ./cmd/eni-operator/...;./internal/tagger/...;./internal/nodeeni/...;./internal/attachdefs/...;./internal/podaddrs/...;./internal/readiness/...

.PHONY: manifests
manifests: ## regenerate the CRDs (config/crd/bases) and the RBAC roles (config/rbac: operator, config/agent: node agent) from the code's markers
	$(GO) tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(GO) tool controller-gen rbac:roleName=eni-operator 'paths=$(OPERATOR_RBAC_PATHS)' output:rbac:artifacts:config=config/rbac
	$(GO) tool controller-gen rbac:roleName=eni-agent paths=./internal/agent/... output:rbac:artifacts:config=config/agent
	@$(MAKE) --no-print-directory chart-sync

# The CRDs users install.
INSTALLED_CRDS = $(wildcard config/crd/bases/*.yaml)

.PHONY: chart-sync
chart-sync: ## copy the generated CRDs and RBAC rules into the Helm chart (run by manifests; a test fails when stale)
	@mkdir -p $(CHART)/crds $(CHART)/files
	cp $(INSTALLED_CRDS) $(CHART)/crds/
	cp config/rbac/role.yaml $(CHART)/files/operator-role.yaml
	cp config/agent/role.yaml $(CHART)/files/agent-role.yaml
	@mkdir -p $(CHART)/files/iam
	cp docs/iam/*.json $(CHART)/files/iam/

.PHONY: lint
lint: ## golangci-lint (.golangci.yml: go vet, staticcheck, architecture rules, function size, ...) and gofmt check
	golangci_lint="$$(GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/golangci-lint-binary.sh)"; \
	"$$golangci_lint" run ./...
	@unformatted="$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*'))"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi

.PHONY: test
test: lint control-plane helm promtool ## lint, then unit, integration (envtest + emulator) and conformance tests; internal/ with the race detector
	KUBEBUILDER_ASSETS="$$(hack/control-plane-binaries.sh)" $(GO) test -race -count=1 -p $(TEST_P) $(TEST_ARGS) ./internal/...
	KUBEBUILDER_ASSETS="$$(hack/control-plane-binaries.sh)" $(GO) test -count=1 -p $(TEST_P) $(TEST_ARGS) $$($(GO) list ./... | grep -v '/internal/')

# make e2e: a real one-node cluster on this machine (test/e2e/cluster):
# kubelet, kube-proxy, kube-controller-manager and kube-scheduler built
# like the control plane (hack/e2e/node-binaries.sh), containerd and runc
# from Debian's packages, the CNI bridge; the chart installed with helm,
# make image's images as pods. Needs root and cgroups; not part of make
# test. E2E_ARGS="-run TestOperator" picks tests.
E2E_ARGS ?=

.PHONY: e2e
e2e: build image control-plane helm ## the chart, images and agent on a real one-node cluster on this machine (root; kubelet, containerd, CNI); E2E_ARGS="-run ..."
	@hack/e2e/node-deps.sh
	@node_bin="$$(hack/e2e/node-binaries.sh)"; previous="$$(hack/e2e/previous-release.sh)"; \
	$(GO) run ./hack/e2e/pause-image --out $(BIN)/e2e-pause-image.tar; \
	ENI_E2E=1 ENI_E2E_CONTROL_PLANE="$$(hack/control-plane-binaries.sh)" ENI_E2E_NODE_BIN="$$node_bin" ENI_E2E_PREVIOUS="$$previous" \
	ENI_E2E_PAUSE_IMAGE=$(CURDIR)/$(BIN)/e2e-pause-image.tar ENI_E2E_EMULATOR=$(CURDIR)/$(BIN)/ec2-emulator \
	ENI_E2E_HELM="$$(hack/helm-binary.sh)" ENI_E2E_IMAGE=$(CURDIR)/$(IMAGE_DIR)/eni-operator-image.tar \
	ENI_E2E_AGENT_IMAGE=$(CURDIR)/$(IMAGE_DIR)/eni-agent-image.tar ENI_E2E_AGENT_IMAGE_REPO='$(IMAGE_AGENT_REPO)' \
	ENI_E2E_IMAGE_REPO='$(IMAGE_REPO)' ENI_E2E_VERSION='$(VERSION)' \
		$(GO) test -count=1 -v -timeout 30m $(E2E_ARGS) ./test/e2e/

.PHONY: conformance
conformance: ## EC2 conformance suite; EC2_ENDPOINT=http://host:port points it at a running endpoint
	$(GO) test -count=1 -v ./test/ec2conformance/

.PHONY: conformance-moto
conformance-moto: ## the ENI settings conformance cases against moto_server (a second model of EC2; moto_server must be on PATH)
	ENI_MOTO=1 $(GO) test -count=1 -v -run 'TestENISettingsAgainstMoto' ./test/ec2conformance/

.PHONY: emulator
emulator: build ## run the EC2 emulator on $(EMULATOR_LISTEN) with the demo world
	$(BIN)/ec2-emulator --listen $(EMULATOR_LISTEN) --seed-file hack/demo/world.json

# make demo NODE=real: make e2e's node (root) running only TestDemo, which
# waits for Ctrl-C (-timeout 0); the node is torn down after it.
NODE ?=

.PHONY: demo
demo: ## the whole system on one machine: control plane, EC2 emulator, operator, demo pods and a NodeENI (Ctrl-C stops it); NODE=real: on make e2e's real node (root)
ifeq ($(NODE),real)
	@ENI_E2E_DEMO=1 $(MAKE) --no-print-directory e2e E2E_ARGS="-run TestDemo -timeout 0"
else
	@echo "» building the sandbox (bin/eni-sandbox)"
	@$(GO) build -o $(BIN)/eni-sandbox ./cmd/eni-sandbox
	@$(BIN)/eni-sandbox $(DEMO_ARGS)
endif

.PHONY: bench
bench: build control-plane ## figures (tagging burst, churn, restart, memory, NodeENI rollouts, NodeENI over 5,000 nodes (about 35 minutes by itself), 10,000-pod burst, new ENIs, tag-policy re-tag of 10,000 pods, 1,000 Multus pod addresses on 50 nodes) with SVG charts and Go benchmarks into bench/results/report.md; FIGURE=PodBurst runs one
	@mkdir -p bench/results
	ENI_BENCH=1 ENI_OPERATOR_BIN=$(CURDIR)/$(BIN)/eni-operator KUBEBUILDER_ASSETS="$$(hack/control-plane-binaries.sh)" \
		$(GO) test -count=1 -v -timeout 150m -p 1 -run 'TestFigure$(FIGURE)' ./test/bench/ ./test/failover/ | grep --line-buffered -v '^I1' | tee bench/results/figures.log
	$(GO) test -run '^$$' -bench . -benchmem ./internal/ec2/ ./api/v1alpha1/ | tee bench/results/go-bench.txt
	$(GO) run ./hack/bench-report bench/results

.PHONY: bench-100k
bench-100k: build control-plane ## opt-in figure: memory and restart with 100,000 annotated pods and ENIs (about 15 minutes) into bench/results
	@mkdir -p bench/results
	ENI_BENCH=1 ENI_BENCH_100K=1 ENI_OPERATOR_BIN=$(CURDIR)/$(BIN)/eni-operator KUBEBUILDER_ASSETS="$$(hack/control-plane-binaries.sh)" \
		$(GO) test -count=1 -v -timeout 120m -run 'TestFigureMemory100k' ./test/bench/ | grep --line-buffered -v '^I1' | tee bench/results/figures-100k.log
	$(GO) run ./hack/bench-report bench/results

.PHONY: bench-soak
bench-soak: build control-plane ## opt-in figure: BENCH_SOAK (30m) of churn at 50 pods/s with annotation edits and NodeENI label flips; RSS, goroutines, ledger and inventory age every 10 s, and the end state, into bench/results
	@mkdir -p bench/results
	ENI_BENCH=1 BENCH_SOAK=$(or $(BENCH_SOAK),30m) ENI_OPERATOR_BIN=$(CURDIR)/$(BIN)/eni-operator KUBEBUILDER_ASSETS="$$(hack/control-plane-binaries.sh)" \
		$(GO) test -count=1 -v -timeout 120m -run 'TestFigureSoak' ./test/bench/ | grep --line-buffered -v '^I1' | tee bench/results/figures-soak.log
	$(GO) run ./hack/bench-report bench/results

.PHONY: clean
clean: ## remove bin/ (the control-plane cache in ~/.cache/eni-operator stays)
	rm -rf $(BIN)
