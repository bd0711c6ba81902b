# syntax=docker/dockerfile:1.7
#
# promotion-webhook (the default target) and promotion-controller images.
#
#   docker build -t ghcr.io/kubectl-promotion/promotion-webhook:v0.1.0 .
#   docker build --target controller -t ghcr.io/kubectl-promotion/promotion-controller:v0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 -t … --push .
#
# The runtime is distroless/cc (glibc, CA roots, no shell) rather than
# distroless/static: a static musl build would use musl's allocator, which
# serialises allocations across threads and shows up as admission latency
# under concurrent load. Builder and runtime share Debian 12 (glibc 2.36).

ARG RUST_VERSION=1.95

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS builder
WORKDIR /src
COPY . .
# The cache mounts keep the registry and incremental target dir across builds;
# the binary is copied out of the cached target dir in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --locked --release -p promotion-webhook --bin promotion-webhook \
                                   -p promotion-controller --bin promotion-controller \
 && install -D -m 0755 target/release/promotion-webhook /out/promotion-webhook \
 && install -D -m 0755 target/release/promotion-controller /out/promotion-controller

# `--target controller`: the open-source ClusterPromotion reconciler.
FROM gcr.io/distroless/cc-debian12:nonroot AS controller
LABEL org.opencontainers.image.title="promotion-controller" \
      org.opencontainers.image.description="Open-source stage reconciler for Sveltos ClusterPromotion" \
      org.opencontainers.image.source="https://github.com/kubectl-promotion/kubectl-promotion" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/promotion-controller /usr/local/bin/promotion-controller
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/promotion-controller"]
CMD ["run"]

FROM gcr.io/distroless/cc-debian12:nonroot AS webhook
LABEL org.opencontainers.image.title="promotion-webhook" \
      org.opencontainers.image.description="Validating and mutating admission webhook for Sveltos ClusterPromotion" \
      org.opencontainers.image.source="https://github.com/kubectl-promotion/kubectl-promotion" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/promotion-webhook /usr/local/bin/promotion-webhook
# 65532:65532 is distroless's `nonroot`; manifests/base/deployment.yaml runs as
# the same UID and GID.
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/usr/local/bin/promotion-webhook"]
CMD ["serve"]
