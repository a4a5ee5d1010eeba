# syntax=docker/dockerfile:1
# The product's images, for those with a container runtime. `make image`
# builds the same two without one (hack/image; test/image checks that
# both give the same paths, users, entrypoints and labels):
#   docker build -t eni-operator .              # default (target operator): /eni-operator and
#                                               # /eni-agent, user 65532:65532, entrypoint /eni-operator;
#                                               # the chart and config/ run both workloads from it
#   docker build --target agent -t eni-agent .  # /eni-agent only, user 0:0 (the agent configures
#                                               # host interfaces: root with NET_ADMIN), entrypoint /eni-agent
# VERSION is stamped into the binaries (--version) and the version label;
# REVISION (the commit) goes into the revision label.
#
# Base images. The images are FROM scratch: static binaries on the base
# file system hack/image writes (passwd and group with nonroot 65532,
# nsswitch.conf, Mozilla's CA roots from go.sum-pinned
# golang.org/x/crypto/x509roots/fallback, /tmp), so there
# is no base image to pin. The build stage's golang image is a tag, not a
# digest: no registry was reachable where this was written, and a digest
# nobody checked is no pin. Pin it with
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:$(crane digest golang:1.26) .
# What the build stage puts into the images is pinned by checksum anyway:
# the compiler by GOTOOLCHAIN (the go command fetches that exact release
# and checks it against sum.golang.org when the image's go is another),
# the modules and the CA roots by go.sum.

ARG GO_IMAGE=golang:1.26

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS TARGETARCH VERSION=dev GO_TOOLCHAIN=go1.26.8
ENV GOTOOLCHAIN=${GO_TOOLCHAIN}
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
COPY hack/image/ hack/image/
# The base file system, exactly as make image lays it out.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go run ./hack/image --rootfs /rootfs
# Static binaries (no cgo): scratch has no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/eni-operator ./cmd/eni-agent

# What both images share: the base file system, PATH and the labels but
# the title.
FROM scratch AS base
ARG VERSION=dev REVISION=unknown
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL org.opencontainers.image.source=https://github.com/eni-operator/eni-operator \
      org.opencontainers.image.url=https://github.com/eni-operator/eni-operator \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION}

# The agent alone, for agent.image in the chart.
FROM base AS agent
COPY --from=build /out/eni-agent /eni-agent
LABEL org.opencontainers.image.title=eni-agent
USER 0:0
ENTRYPOINT ["/eni-agent"]

# Default target: both binaries; the operator talks to the API server and
# EC2 only: non-root, no shell. The chart runs the agent from this image
# too (command /eni-agent, runAsUser 0).
FROM base AS operator
COPY --from=build /out/eni-operator /eni-operator
COPY --from=build /out/eni-agent /eni-agent
LABEL org.opencontainers.image.title=eni-operator
USER 65532:65532
ENTRYPOINT ["/eni-operator"]
