# syntax=docker/dockerfile:1

# Build stage: the same hack/build.sh that `make build` runs, so the image
# holds exactly the binary a local build produces (static, CGO_ENABLED=0,
# -trimpath, version stamped through -ldflags).
#
# Cross builds: with BuildKit (docker buildx build --platform ...) this stage
# runs natively on the build machine and Go cross-compiles for the target.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules first: this layer is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# VERSION is stamped into the binary (controller --version). Without it
# build.sh would fall back to `git describe`, but .git is not in the context.
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
    VERSION="${VERSION}" OUT=/out/controller GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" \
    ./hack/build.sh

# Runtime stage: no shell, no package manager, a non-root user.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/controller /controller
USER 65532:65532
ENTRYPOINT ["/controller"]
