# GitOps Service. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

# Modules of the workspace (go.work); each binary module also builds with GOWORK=off.
MODULES := api db-schema backend-shared backend cluster-agent appstudio-controller tests-e2e
# The three binaries (one Go module each).
BINARIES := backend cluster-agent appstudio-controller
# Packages of every workspace module, as `go test` patterns.
PACKAGES := $(addprefix ./,$(addsuffix /...,$(MODULES)))

# Pinned tools (hack/tools/go.mod), built into bin/tools.
TOOLS_BIN := $(CURDIR)/bin/tools
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint

export KUBEBUILDER_ASSETS ?= $(shell hack/build-binaries.sh --assets-dir)

# Go test flags; override e.g. `make test TEST_FLAGS='-run TestX -v'`.
TEST_FLAGS ?= -count=1 -timeout=20m

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Run and test

.PHONY: run
run: deps binaries ## Run the service locally: API server, PostgreSQL, Argo CD, a Git server and the three binaries.
	go run ./tests-e2e/cmd/local-stack

# The end-to-end suite (real Argo CD), the engine instance on a second cluster (real Argo
# CD there) and the chaos test (its short form: 200 changes) each start their own stack
# (API server, PostgreSQL); they run one after the other, after the other tests, because
# two stacks at once overload two cores.
E2E_PACKAGES := ./tests-e2e/e2e/... ./tests-e2e/refresh/... ./tests-e2e/orphans/...
REMOTE_ENGINE_PACKAGES := ./tests-e2e/remoteengine/...
CHAOS_PACKAGES := ./tests-e2e/chaos/...

.PHONY: test
test: test-integration test-fuzz test-images test-e2e test-install ## Run every test: unit, integration, the receiver's fuzzing, images, end to end, then the install on a real node.

.PHONY: test-integration
test-integration: deps binaries ## Run unit and integration tests (real kube-apiserver, etcd, controller-manager, PostgreSQL).
	go test $(TEST_FLAGS) $$(go list $(PACKAGES) | grep -v -e '/tests-e2e/e2e' -e '/tests-e2e/refresh' -e '/tests-e2e/orphans' -e '/tests-e2e/remoteengine' -e '/tests-e2e/chaos' -e '/tests-e2e/install')
	cd hack/promrules && GOWORK=off go test $(TEST_FLAGS) ./...

.PHONY: test-e2e
test-e2e: deps binaries ## Run the end-to-end suite against a real Argo CD and Git server, an engine instance on a second cluster, and the short chaos test.
	go test $(TEST_FLAGS) $(E2E_PACKAGES)
	go test $(TEST_FLAGS) $(REMOTE_ENGINE_PACKAGES)
	go test $(TEST_FLAGS) $(CHAOS_PACKAGES)

# How long `make fuzz` runs each fuzz target (their seeds run in every `go test`).
FUZZ_TIME ?= 20s

# How long `make test` fuzzes the Git webhook receiver's parsing of what anyone may send it.
TEST_FUZZ_TIME ?= 15s

.PHONY: test-fuzz
test-fuzz: ## Fuzz the Git webhook receiver's parsing for TEST_FUZZ_TIME (part of make test; make fuzz runs every target).
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(TEST_FUZZ_TIME) ./backend/internal/gitwebhook

.PHONY: fuzz
fuzz: ## Run each fuzz target (the receiver's parsing, the validation rules, kubeconfigs, names) for FUZZ_TIME.
	@set -e; for pkg in $$(grep -rl --include='*_test.go' '^func Fuzz' backend backend-shared appstudio-controller cluster-agent | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -h '^func Fuzz' $$pkg/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo "fuzz: $$pkg $$target for $(FUZZ_TIME)"; go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZ_TIME) ./$$pkg; \
		done; \
	done

# Chaos flags; e.g. `make test-chaos CHAOS_FLAGS='-chaos.seed=42'`.
CHAOS_FLAGS ?= -chaos.objects=1000 -chaos.churn=6m

.PHONY: test-chaos
test-chaos: deps binaries ## Churn 1,000 changes while the binaries, PostgreSQL and the API server crash; check convergence.
	go test -v -count=1 -timeout=40m $(CHAOS_PACKAGES) -args $(CHAOS_FLAGS)

# Benchmark flags; e.g. `make bench BENCH_FLAGS='-n 10000 -sizes 1000,2000,5000,10000'`.
BENCH_FLAGS ?=

.PHONY: bench
bench: deps binaries ## Benchmark throughput, status latency, idle cost, memory and placement on the local stack (docs/performance.md).
	go run ./tests-e2e/cmd/bench $(BENCH_FLAGS)

.PHONY: bench-pipeline
bench-pipeline: deps binaries ## Benchmark only the core pipeline (throughput against the floor, status latency, memory).
	go run ./tests-e2e/cmd/bench -phases p1,p2,p4 -name bench-pipeline $(BENCH_FLAGS)

.PHONY: bench-deploy
bench-deploy: deps binaries ## Time deployments to Synced/Healthy against Argo CD directly, pushes to deployed with the Git webhook against polling, and 500 deployments at once (real Argo CD; about 15 minutes).
	go run ./tests-e2e/cmd/bench-deploy $(BENCH_FLAGS)

.PHONY: deps
deps: ## Install missing system packages (PostgreSQL, git, Redis) from Debian.
	hack/install-deps.sh

.PHONY: binaries
binaries: ## Build (or reuse cached) kube-apiserver, kube-controller-manager, etcd and Argo CD.
	hack/build-binaries.sh all

.PHONY: build
build: ## Build the three binaries into bin/, each with GOWORK=off as a release would.
	@mkdir -p bin
	for m in backend cluster-agent appstudio-controller; do (cd $$m && GOWORK=off go build -o ../bin/$$m .); done

##@ One-node cluster

CLUSTER_TOOL := $(CURDIR)/bin/tools/cluster
CLUSTER_FLAGS ?=

.PHONY: cluster-tool
cluster-tool:
	go build -o $(CLUSTER_TOOL) ./tests-e2e/cmd/cluster

.PHONY: node-images
node-images: images-tool
	$(IMAGES_TOOL) pause -out .local/node-images/pause.tar

.PHONY: cluster
cluster: deps binaries node-images cluster-tool ## Start a one-node cluster (kubelet, containerd, kube-proxy) in a network namespace of its own; then export KUBECONFIG=.local/cluster/kubeconfig.
	$(CLUSTER_TOOL) up -kube-dir "$$(hack/build-binaries.sh --kube-dir)" -etcd "$$(hack/build-binaries.sh --assets-dir)/etcd" -coredns "$$(hack/build-binaries.sh --coredns)" $(CLUSTER_FLAGS)

# The install test's release: built for this machine's platform, named as the node imports it.
INSTALL_DIST := .local/install-release
INSTALL_FLAGS ?=

# The release the upgrade test starts from (a commit or tag, in hack/upgrade-from): its source
# is exported with git archive and its release built with this tree's image tool.
UPGRADE_FROM ?= $(shell sed -n 's/^\([0-9a-zA-Z.]\{7,\}\).*/\1/p' hack/upgrade-from)
UPGRADE_DIR := .local/upgrade-from

.PHONY: previous-release
previous-release: images-tool
	@if [ "$$(cat $(UPGRADE_DIR)/release/.commit 2>/dev/null)" = "$$(git rev-parse $(UPGRADE_FROM))" ]; then echo "previous release $(UPGRADE_FROM): cached in $(UPGRADE_DIR)"; exit 0; fi; \
	set -e; rm -rf $(UPGRADE_DIR); mkdir -p $(UPGRADE_DIR)/src $(UPGRADE_DIR)/release; \
	git archive $(UPGRADE_FROM) | tar -x -C $(UPGRADE_DIR)/src; \
	$(IMAGES_TOOL) build -root $(UPGRADE_DIR)/src -out $(UPGRADE_DIR)/release/images -version v0.0.0-previous -commit $$(git rev-parse $(UPGRADE_FROM)) \
		-created $$(git log -1 --format=%ct $(UPGRADE_FROM)) -platforms linux/$$(go env GOARCH); \
	$(IMAGES_TOOL) release -root $(UPGRADE_DIR)/src -layout $(UPGRADE_DIR)/release/images -repo localhost/gitops-service -overlay manifests/overlays/production -out $(UPGRADE_DIR)/release/install.yaml; \
	$(IMAGES_TOOL) render -root $(UPGRADE_DIR)/src -overlay manifests/argocd -out $(UPGRADE_DIR)/release/argocd.yaml; \
	git rev-parse $(UPGRADE_FROM) > $(UPGRADE_DIR)/release/.commit

.PHONY: test-install
test-install: deps binaries node-images cluster-tool ## Install a fresh release on a real one-node cluster by running docs/install.md, check it works; upgrade to it from hack/upgrade-from.
	$(MAKE) release DIST=$(INSTALL_DIST) VERSION=v0.0.0 IMAGE_REPO=localhost/gitops-service PLATFORMS=linux/$$(go env GOARCH)
	$(MAKE) previous-release
	$(IMAGES_TOOL) host -argocd "$$(hack/build-binaries.sh --argocd-dir)/argocd" -out .local/node-images/host.tar
	GITOPS_RELEASE_DIR=$(CURDIR)/$(INSTALL_DIST) GITOPS_PREVIOUS_RELEASE_DIR=$(CURDIR)/$(UPGRADE_DIR)/release GITOPS_PREVIOUS_SOURCE_DIR=$(CURDIR)/$(UPGRADE_DIR)/src \
		go test $(TEST_FLAGS) ./tests-e2e/install/... $(INSTALL_FLAGS)

.PHONY: deploy
deploy: deps binaries node-images cluster-tool ## Install a fresh release on the make cluster node as docs/install.md says (PostgreSQL beside the node).
	$(MAKE) release DIST=$(INSTALL_DIST) VERSION=v0.0.0 IMAGE_REPO=localhost/gitops-service PLATFORMS=linux/$$(go env GOARCH)
	$(IMAGES_TOOL) host -argocd "$$(hack/build-binaries.sh --argocd-dir)/argocd" -out .local/node-images/host.tar
	$(IMAGES_TOOL) archive -layout $(INSTALL_DIST)/images -repo localhost/gitops-service -tag v0.0.0 -out .local/node-images/gitops-service.tar
	$(CLUSTER_TOOL) deploy -kube-dir "$$(hack/build-binaries.sh --kube-dir)" -release $(INSTALL_DIST) \
		-archives .local/node-images/host.tar,.local/node-images/gitops-service.tar $(CLUSTER_FLAGS)

.PHONY: cluster-down
cluster-down: cluster-tool ## Stop the one-node cluster and remove everything it made (processes, namespaces, iptables rules, mounts, state).
	$(CLUSTER_TOOL) down $(CLUSTER_FLAGS)

##@ Images and releases

# The version stamped into images and binaries; a release sets it (make release VERSION=v0.1.0).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit's time: every timestamp in the images, so that a commit always gives the same digests.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Where make push and make release publish the images: each binary goes to $(IMAGE_REPO)/<binary>.
IMAGE_REPO ?= ghcr.io/gitops-service
PLATFORMS ?= linux/amd64,linux/arm64
IMAGES_DIR ?= .local/images
# Where make release writes.
DIST ?= dist
IMAGES_TOOL := $(CURDIR)/bin/tools/images

.PHONY: images-tool
images-tool:
	cd hack/images && GOWORK=off go build -o $(IMAGES_TOOL) .

.PHONY: images
images: deps images-tool ## Build the images of the three binaries into an OCI layout ($(IMAGES_DIR)), for $(PLATFORMS).
	$(IMAGES_TOOL) build -out $(IMAGES_DIR) -version $(VERSION) -commit $(COMMIT) -created $(SOURCE_DATE_EPOCH) -platforms $(PLATFORMS) -sbom-dir $(IMAGES_DIR)/sbom

.PHONY: push
push: images-tool ## Push the images of $(IMAGES_DIR) with their SBOMs to $(IMAGE_REPO)/<binary>:$(VERSION).
	$(IMAGES_TOOL) push -layout $(IMAGES_DIR) -repo $(IMAGE_REPO) -tag $(VERSION)

.PHONY: release
release: deps images-tool ## Build a release: images in $(DIST)/images, $(DIST)/install.yaml (and -cert-manager) pinned to $(IMAGE_REPO) by digest, $(DIST)/argocd.yaml, $(DIST)/appstudio-crds.yaml (make release VERSION=v0.1.0).
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "make release: VERSION=$(VERSION) is not vX.Y.Z" >&2; exit 2; }
	$(IMAGES_TOOL) build -out $(DIST)/images -version $(VERSION) -commit $(COMMIT) -created $(SOURCE_DATE_EPOCH) -platforms $(PLATFORMS) -sbom-dir $(DIST)/images/sbom
	$(IMAGES_TOOL) release -layout $(DIST)/images -repo $(IMAGE_REPO) -overlay manifests/overlays/production -out $(DIST)/install.yaml
	$(IMAGES_TOOL) release -layout $(DIST)/images -repo $(IMAGE_REPO) -overlay manifests/overlays/production-cert-manager -out $(DIST)/install-cert-manager.yaml
	$(IMAGES_TOOL) render -overlay manifests/argocd -out $(DIST)/argocd.yaml
	$(IMAGES_TOOL) render -overlay manifests/crd/appstudio -out $(DIST)/appstudio-crds.yaml
	@echo "$(DIST) is ready; publish the images with: make push IMAGES_DIR=$(DIST)/images IMAGE_REPO=$(IMAGE_REPO) VERSION=$(VERSION)"

.PHONY: test-images
test-images: deps ## Test the image build: reproducible digests, contents, SBOMs, push to a registry, release rendering.
	cd hack/images && GOWORK=off go test $(TEST_FLAGS) ./...

##@ Generate and verify

.PHONY: tools
tools: ## Build the pinned developer tools into bin/tools.
	cd hack/tools && GOWORK=off go build -o $(TOOLS_BIN)/ sigs.k8s.io/controller-tools/cmd/controller-gen github.com/golangci/golangci-lint/v2/cmd/golangci-lint golang.org/x/vuln/cmd/govulncheck

.PHONY: generate
generate: tools ## Generate deepcopy functions (the API types and the own copy of Argo CD's).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./backend-shared/argocd/v1alpha1/...

.PHONY: manifests
manifests: tools ## Generate CRDs (manifests/crd/bases, the AppStudio ones in manifests/crd/appstudio; the sandbox's SpaceRequest, for tests and installs without the sandbox, in manifests/crd/toolchain), webhook configurations (manifests/webhook, manifests/webhook/appstudio-controller) one ClusterRole per binary (manifests/rbac/<binary>), the cluster-agent's in the tenants' namespaces (manifests/rbac/cluster-agent-tenants) and the namespace provisioner's (manifests/rbac/namespace-provisioner).
	$(CONTROLLER_GEN) crd paths=./api/managedgitops/... output:crd:dir=manifests/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/appstudio/... output:crd:dir=manifests/crd/appstudio
	$(CONTROLLER_GEN) crd paths=./api/toolchain/... output:crd:dir=manifests/crd/toolchain
	$(CONTROLLER_GEN) webhook paths=./backend/... output:webhook:dir=manifests/webhook
	$(CONTROLLER_GEN) webhook paths=./appstudio-controller/... output:webhook:dir=manifests/webhook/appstudio-controller
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-backend paths=./backend/... output:rbac:dir=manifests/rbac/backend
	# The cluster-agent's role is bound in the engine namespace only; the rights it needs in the
	# tenants' namespaces (their deployers) are a role of their own, bound cluster-wide.
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-cluster-agent "paths=$$(cd cluster-agent && go list ./... | grep -v '/internal/tenantcluster$$' | sed 's|^github.com/gitops-service/gitops-service/cluster-agent|./cluster-agent|' | paste -sd';')" output:rbac:dir=manifests/rbac/cluster-agent
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-cluster-agent-tenants paths=./cluster-agent/internal/tenantcluster/... output:rbac:dir=manifests/rbac/cluster-agent-tenants
	# The namespace provisioner's rights are a role of their own (manifests/components/namespace-provisioner),
	# installed only where it is enabled: the appstudio-controller's role leaves its package out.
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-appstudio-controller "paths=$$(cd appstudio-controller && go list ./... | grep -v '/internal/provisioner$$' | sed 's|^github.com/gitops-service/gitops-service/appstudio-controller|./appstudio-controller|' | paste -sd';')" output:rbac:dir=manifests/rbac/appstudio-controller
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-namespace-provisioner paths=./appstudio-controller/internal/provisioner/... output:rbac:dir=manifests/rbac/namespace-provisioner

.PHONY: argocd-manifests
argocd-manifests: ## Copy Argo CD's core install of the pinned version (hack/argocd/go.mod) into manifests/argocd/upstream.
	dir=$$(cd hack/argocd && GOWORK=off go mod download -json github.com/argoproj/argo-cd/v3 | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); \
	install -m 644 "$$dir/manifests/core-install.yaml" manifests/argocd/upstream/core-install.yaml

.PHONY: api-docs
api-docs: ## Generate the API reference (docs/api) from the CRDs.
	cd hack/api-docs && GOWORK=off go run . -crds ../../manifests/crd -out ../../docs/api

.PHONY: fmt
fmt: ## gofmt every module.
	gofmt -w $(MODULES) hack

.PHONY: tidy
tidy: ## go mod tidy every module.
	for m in $(MODULES) hack/tools hack/kube-binaries hack/etcd hack/images hack/coredns hack/promrules; do (cd $$m && GOWORK=off go mod tidy); done

.PHONY: lint
lint: tools ## go vet and golangci-lint every module.
	go vet $(PACKAGES)
	status=0; for m in $(MODULES); do (cd $$m && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || status=1; done; \
	for m in hack/images hack/promrules; do (cd $$m && GOWORK=off go vet ./... && GOWORK=off $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || status=1; done; exit $$status

.PHONY: vulncheck
vulncheck: tools ## govulncheck every module against the Go vulnerability database ($$GOVULNDB, default https://vuln.go.dev).
	status=0; for m in $(MODULES); do (cd $$m && $(TOOLS_BIN)/govulncheck ./...) || status=1; done; exit $$status

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted, go.mod files are untidy, or lint fails.
	hack/verify.sh

.PHONY: clean
clean: ## Remove build output (the binary cache stays; see hack/build-binaries.sh).
	rm -rf bin dist $(IMAGES_DIR)
