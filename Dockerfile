# syntax=docker/dockerfile:1
# Both binaries of the product, built once:
#   docker build --target operator -t eni-operator .   # the Deployment's image
#   docker build --target agent    -t eni-agent .      # the DaemonSet's image
#   docker build -t eni-operator .                     # default: both binaries, /eni-operator
# VERSION is stamped into the binaries (--version).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS TARGETARCH VERSION=dev
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
# Static binaries (no cgo): distroless/static has no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/eni-operator ./cmd/eni-agent

# The operator talks to the API server and EC2 only: non-root, no shell.
FROM gcr.io/distroless/static-debian12:nonroot AS operator
COPY --from=build /out/eni-operator /eni-operator
USER 65532:65532
ENTRYPOINT ["/eni-operator"]

# The agent configures host interfaces (netlink, sysfs): the DaemonSet
# runs it privileged (the chart sets runAsUser 0); the image itself stays
# nonroot by default, like the operator's.
FROM gcr.io/distroless/static-debian12:nonroot AS agent
COPY --from=build /out/eni-agent /eni-agent
USER 65532:65532
ENTRYPOINT ["/eni-agent"]

# Default target: one image with both binaries, which the chart uses for
# both workloads (command: /eni-operator or /eni-agent).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/eni-operator /eni-operator
COPY --from=build /out/eni-agent /eni-agent
USER 65532:65532
ENTRYPOINT ["/eni-operator"]
