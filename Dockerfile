# syntax=docker/dockerfile:1
# Images of winproxy, one target each, for those who build with a container engine:
#   controller  winproxy-controller for Linux, static, on distroless, as a non-root user
#               (make docker-build; the default target)
#   agent       winproxy-agent.exe on the Windows HostProcess base image
#               (make docker-build-agent; needs buildx: --platform windows/amd64 --target agent)
# `make images` builds the same two images with Go alone (internal/imagebuild), and is what
# `make release` pushes: the same bases, pinned by the same digests, the binary at the same path,
# the same entrypoint, working directory, user and labels (TestDockerfileDescribesTheImages in
# test/images keeps them equal). Only `make images` is reproducible to the digest.

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
# As make images builds them: static, without the build machine's paths, for the architecture's
# baseline CPU.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOAMD64=v1 GOARM64=v8.0 \
    go build -trimpath -ldflags "$LDFLAGS" -o /workspace/bin/ ./cmd/...

# The HostProcess base image is a few KB and has no os.version, so the image runs on every Windows
# Server release. The agent runs on the host itself, with this image's files mounted at
# CONTAINER_SANDBOX_MOUNT_POINT (C:\hpc with containerd 1.7 and later), which the entrypoint names;
# WORKDIR creates an empty hpc directory in the layer, the one file `make images` does not add.
FROM mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0@sha256:b4c9637e032f667c52d1eccfa31ad8c63f1b035e8639f3f48a510536bf34032b AS agent
ARG VERSION=dev
ARG COMMIT=
COPY --from=builder /workspace/bin/winproxy-agent.exe /winproxy-agent.exe
WORKDIR C:\\hpc
ENTRYPOINT ["$env:CONTAINER_SANDBOX_MOUNT_POINT/winproxy-agent.exe"]
LABEL org.opencontainers.image.title="winproxy-agent" \
      org.opencontainers.image.description="winproxy-agent programs HNS load balancers on a Windows node in place of kube-proxy (a HostProcess container)." \
      org.opencontainers.image.source="https://github.com/winproxy/winproxy" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.base.name="mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS controller
ARG VERSION=dev
ARG COMMIT=
COPY --from=builder /workspace/bin/winproxy-controller /winproxy-controller
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/winproxy-controller"]
LABEL org.opencontainers.image.title="winproxy-controller" \
      org.opencontainers.image.description="winproxy-controller resolves WindowsProxyConfigs per Windows node and rolls them out." \
      org.opencontainers.image.source="https://github.com/winproxy/winproxy" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
