# syntax=docker/dockerfile:1
# Images of winproxy, one target each:
#   controller  winproxy-controller for Linux, static, on distroless, as a non-root user
#               (make docker-build; the default target)
#   agent       winproxy-agent.exe on the Windows HostProcess base image
#               (make docker-build-agent; needs buildx: --platform windows/amd64 --target agent)
# Both binaries are built by the same command as `make build`, cross-compiled on the build machine.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS
ARG TARGETARCH
# make docker-build passes the Makefile's LDFLAGS, which stamp the version.
ARG LDFLAGS="-s -w"
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -ldflags "$LDFLAGS" -o /workspace/bin/ ./cmd/...

# The HostProcess base image is only a manifest for containerd: the agent runs on the host itself,
# with this image's files mounted at %CONTAINER_SANDBOX_MOUNT_POINT%.
FROM mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0 AS agent
COPY --from=builder /workspace/bin/winproxy-agent.exe /winproxy-agent.exe
ENTRYPOINT ["winproxy-agent.exe"]

FROM gcr.io/distroless/static-debian12:nonroot AS controller
COPY --from=builder /workspace/bin/winproxy-controller /winproxy-controller
USER 65532:65532
ENTRYPOINT ["/winproxy-controller"]
