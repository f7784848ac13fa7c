# winproxy: declarative Windows service proxying for Kubernetes.
# `make help` lists the targets.

# The Go tools are pinned in tool modules, one per tool (hack/tools/<tool>/go.mod, with a `tool`
# directive and a go.sum), and built from them into bin/<tool>-<version>, one file per version: a
# version bump is a change of that go.mod (Dependabot/Renovate style), which the Makefile reads.
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION := v$(shell hack/tool-version.sh sigs.k8s.io/controller-tools hack/tools/controller-gen/go.mod)
GOLANGCI_LINT_VERSION := v$(shell hack/tool-version.sh github.com/golangci/golangci-lint/v2 hack/tools/golangci-lint/go.mod)
# Helm v4: built from source it knows the Kubernetes version it was compiled against, so the chart's
# kubeVersion check works without faking versions through -ldflags (v3 built this way claims 1.20).
HELM_VERSION := v$(shell hack/tool-version.sh helm.sh/helm/v4 hack/tools/helm/go.mod)
ACTIONLINT_VERSION := v$(shell hack/tool-version.sh github.com/rhysd/actionlint hack/tools/actionlint/go.mod)

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
ACTIONLINT ?= $(LOCALBIN)/actionlint-$(ACTIONLINT_VERSION)
# The end-to-end tests run this helm.
export HELM

# The Kubernetes version of the test control plane (kube-apiserver, kubectl; etcd pinned beside it)
# is pinned in hack/tools/k8s/go.mod.
K8S_VERSION := $(shell hack/tool-version.sh k8s.io/kubernetes hack/tools/k8s/go.mod)
K8S_BIN_DIR := $(LOCALBIN)/k8s/$(K8S_VERSION)
# A KUBEBUILDER_ASSETS set by the caller (e.g. from setup-envtest on a machine with internet) wins.
ifeq ($(origin KUBEBUILDER_ASSETS),undefined)
KUBEBUILDER_ASSETS := $(K8S_BIN_DIR)
K8S_TOOLS_TARGET := k8s-tools
endif
export KUBEBUILDER_ASSETS
KUBECTL ?= $(KUBEBUILDER_ASSETS)/kubectl

GO_TEST_FLAGS ?= -race -count=1
TEST_TIMEOUT ?= 30m

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

DEMO_FLAGS ?=

.PHONY: demo
demo: $(K8S_TOOLS_TARGET) build ## Run the whole system on this machine: control plane, controller, simulated Windows nodes (DEMO_FLAGS=--once to show and exit).
	go run ./hack/demo --bin-dir $(LOCALBIN) $(DEMO_FLAGS)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (config/crd/bases) and RBAC (config/rbac) from the Go markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	@# Descriptions as paragraphs, not Go comments wrapped at 100 columns: kubectl explain prints them as they are.
	go run ./hack/crddesc config/crd/bases/*.yaml
	@# The chart renders the CRDs and both ClusterRoles from verbatim copies, so they cannot drift.
	rm -f $(CHART_DIR)/files/crds/*.yaml && cp config/crd/bases/*.yaml $(CHART_DIR)/files/crds/
	cp config/rbac/role.yaml $(CHART_DIR)/files/rbac/manager-role.yaml
	cp config/rbac/agent_role.yaml $(CHART_DIR)/files/rbac/agent-role.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods, the feature-gate table from the pinned Kubernetes release, and README.md's condition, reason and metrics tables.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."
	go generate ./internal/featuregate ./api/...

.PHONY: fmt
fmt: ## Run gofmt on the code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet, for Linux and for Windows.
	go vet ./...
	GOOS=windows go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: bench
bench: $(K8S_TOOLS_TARGET) ## Run the benchmarks of docs/performance.md (the controller's 1,000-node fleet takes about 2 minutes).
	go test -run '^$$' -bench . -benchmem ./agent/engine
	go test -run '^$$' -bench . -benchmem -benchtime=3x ./agent/apply
	go test -run '^$$' -bench BenchmarkFleet -benchtime 1x ./controllers

# make test compares 500 clusters; this runs more, and upstream's own tests in the same build.
CONFORMANCE_CLUSTERS ?= 3000

.PHONY: conformance
conformance: ## Compare winproxy with upstream winkernel on CONFORMANCE_CLUSTERS random clusters (docs/differences-from-kube-proxy.md).
	go test -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestConformance|TestUpstreamOwnTests|TestAllowListIsDocumented' ./test/conformance \
		-conformance.clusters=$(CONFORMANCE_CLUSTERS) -conformance.upstream-tests

# The packages that need no control plane, those that start one (envtest), and the end-to-end ones
# that run the built binaries, kubectl and helm.
INTEGRATION_PKGS := ./api/... ./controllers
E2E_PKGS := ./test/e2e ./test/chaos ./internal/demo
UNIT_PKGS = $(shell go list ./... | grep -v -e '/test/' -e '/internal/demo$$' -e '/internal/testenv$$' -e '/api/v1alpha1$$' -e '/controllers$$')

.PHONY: test-unit
test-unit: ## Run the unit tests: no control plane, seconds.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) $(UNIT_PKGS)

.PHONY: test-integration
test-integration: manifests $(K8S_TOOLS_TARGET) ## Run the tests against a real kube-apiserver and etcd: admission (CEL) and the controller.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: manifests $(K8S_TOOLS_TARGET) $(HELM) ## Run the end-to-end tests: built binaries, kubectl and helm against a real control plane, the demo and the bounded chaos runs.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) $(E2E_PKGS)

.PHONY: test-chaos
test-chaos: $(K8S_TOOLS_TARGET) ## Run the chaos tests at full scale (kill loop, fault rates, hostile inputs); their figures are those of docs/reliability.md.
	WINPROXY_CHAOS=full go test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/chaos

.PHONY: test
test: manifests generate $(K8S_TOOLS_TARGET) $(HELM) ## Run all tests: unit, admission, integration and end-to-end, against a real kube-apiserver and etcd.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) ./...

.PHONY: verify
verify: $(GOLANGCI_LINT) ## Fail if generated files are stale, code is unformatted or does not lint (golangci-lint, with the layering rules), the Windows build, vet or real-HNS test build fails, or a workflow does not lint.
	$(MAKE) manifests generate
	@git diff --exit-code -- api config $(CHART_DIR)/files internal/featuregate README.md || { echo "Generated files are stale: run 'make manifests generate' and commit the result."; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "Not gofmt-formatted:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	GOOS=windows go build ./...
	GOOS=windows go vet ./...
	@# The contract suite against real HNS runs only on Windows; it must at least compile here.
	GOOS=windows go test -c -tags hnsintegration -o /dev/null ./agent/hns/...
	$(MAKE) lint
	$(MAKE) helm-lint
	$(MAKE) actionlint

##@ Build

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS ?= -s -w -X github.com/winproxy/winproxy/internal/version.Version=$(VERSION) -X github.com/winproxy/winproxy/internal/version.Commit=$(COMMIT)

.PHONY: build
build: ## Build winproxy-controller and winproxy-agent for this machine into bin/.
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/ ./cmd/...

.PHONY: build-agent-windows
build-agent-windows: ## Build winproxy-agent.exe for Windows (amd64) into bin/.
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/winproxy-agent.exe ./cmd/winproxy-agent

.PHONY: run
run: manifests generate ## Run the controller against the cluster of the current kubeconfig.
	go run ./cmd/winproxy-controller

##@ Deployment

.PHONY: install
install: manifests $(K8S_TOOLS_TARGET) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -f config/crd/bases

.PHONY: uninstall
uninstall: $(K8S_TOOLS_TARGET) ## Uninstall the CRDs (and with them every WindowsProxyConfig and WindowsProxyNode).
	$(KUBECTL) delete --ignore-not-found -f config/crd/bases

IMG ?= ghcr.io/winproxy/winproxy-controller:$(VERSION)
AGENT_IMG ?= ghcr.io/winproxy/winproxy-agent:$(VERSION)

.PHONY: deploy-overlay
deploy-overlay:
	@# An overlay that sets the images, inside the repository: kustomize refuses absolute paths.
	@mkdir -p bin/deploy && printf 'resources:\n- ../../config/default\nimages:\n- name: ghcr.io/winproxy/winproxy-controller\n  newName: %s\n- name: ghcr.io/winproxy/winproxy-agent\n  newName: %s\n' \
		"$(IMG)" "$(AGENT_IMG)" > bin/deploy/kustomization.yaml

.PHONY: deploy
deploy: manifests deploy-overlay $(K8S_TOOLS_TARGET) ## Deploy config/default (namespace winproxy-system) with the images IMG and AGENT_IMG.
	$(KUBECTL) apply --server-side -k bin/deploy

.PHONY: build-installer
build-installer: manifests deploy-overlay $(K8S_TOOLS_TARGET) ## Write dist/install.yaml: everything config/default installs, with the images IMG and AGENT_IMG, in one file for kubectl apply -f.
	@mkdir -p dist
	$(KUBECTL) kustomize bin/deploy > dist/install.yaml
	@echo "dist/install.yaml: kubectl apply --server-side -f dist/install.yaml"

.PHONY: undeploy
undeploy: $(K8S_TOOLS_TARGET) ## Remove what deploy created, CRDs included (and with them every WindowsProxyConfig and WindowsProxyNode).
	$(KUBECTL) delete --ignore-not-found -k config/default

##@ Images

CONTAINER_TOOL ?= docker

.PHONY: docker-build
docker-build: ## Build the controller's Linux image IMG (Dockerfile target controller).
	$(CONTAINER_TOOL) build --target controller --build-arg LDFLAGS="$(LDFLAGS)" -t $(IMG) .

.PHONY: docker-build-agent
docker-build-agent: ## Build the agent's Windows HostProcess image AGENT_IMG into bin/winproxy-agent-image.tar (buildx; a Linux engine cannot load it).
	$(CONTAINER_TOOL) buildx build --platform windows/amd64 --target agent --build-arg LDFLAGS="$(LDFLAGS)" -t $(AGENT_IMG) \
		--output type=oci,dest=$(LOCALBIN)/winproxy-agent-image.tar .

.PHONY: docker-push
docker-push: ## Push IMG, then build and push AGENT_IMG (buildx).
	$(CONTAINER_TOOL) push $(IMG)
	$(CONTAINER_TOOL) buildx build --platform windows/amd64 --target agent --build-arg LDFLAGS="$(LDFLAGS)" -t $(AGENT_IMG) --push .

##@ Helm

CHART_DIR := charts/winproxy

.PHONY: helm
helm: $(HELM) ## Build helm into bin/.

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the chart strictly, with default values and with every ci/*-values.yaml.
	$(HELM) lint --strict $(CHART_DIR)
	@for f in $(CHART_DIR)/ci/*-values.yaml; do echo "$(HELM) lint --strict -f $$f"; $(HELM) lint --strict $(CHART_DIR) -f $$f || exit 1; done

.PHONY: helm-template
helm-template: $(HELM) ## Render the chart with default values to standard output.
	$(HELM) template winproxy $(CHART_DIR) --namespace winproxy-system

##@ Tools

.PHONY: k8s-tools
k8s-tools: ## Build kube-apiserver, etcd and kubectl from source into bin/k8s/<version> (cached).
	@hack/build-k8s.sh $(K8S_BIN_DIR)

# build-tool MODULE-DIR PACKAGE: builds PACKAGE with the dependencies pinned in
# hack/tools/MODULE-DIR/go.mod and go.sum into $@, the binary `cd hack/tools/MODULE-DIR && go tool
# NAME` runs. One module per tool, not one tools module for all: minimal version selection would
# raise each tool's dependencies to the highest any of them requires (golangci-lint and helm share
# many, x/tools and client-go among them), a build no tool's authors tested; golangci-lint's docs
# advise against `go tool` for that reason. Alone in its module, each tool gets exactly the
# dependencies of `go install PACKAGE@VERSION`, and reports its version as that build does (Go
# records the module of the main package in the build info). A change of a tool's go.sum alone keeps
# the file name: remove bin/<tool>-<version> to rebuild.
define build-tool
	go build -C hack/tools/$(1) -buildvcs=false -o $(abspath $@).tmp $(2)
	mv $(abspath $@).tmp $(abspath $@)
endef

$(CONTROLLER_GEN):
	$(call build-tool,controller-gen,sigs.k8s.io/controller-tools/cmd/controller-gen)

$(GOLANGCI_LINT):
	$(call build-tool,golangci-lint,github.com/golangci/golangci-lint/v2/cmd/golangci-lint)

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen into bin/.

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint into bin/.

$(HELM):
	$(call build-tool,helm,helm.sh/helm/v4/cmd/helm)

.PHONY: actionlint
actionlint: $(ACTIONLINT) ## Lint the GitHub workflows (.github/workflows) with actionlint, built into bin/ (no Windows runner is needed to catch their mistakes).
	$(ACTIONLINT)

$(ACTIONLINT):
	$(call build-tool,actionlint,github.com/rhysd/actionlint/cmd/actionlint)
