# The chaoslab image: one binary, run as `chaoslab node`, `chaoslab load`
# or any other command (`chaoslab k8s` writes manifests that use it).
#   docker build -t chaoslab:dev .
# Two stages: the build needs the Rust toolchain and a C compiler (for
# mimalloc); the image that runs keeps only the binary and the topologies.

FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
# No debug information in the image's binary (the release profile keeps
# some for profiling on a workstation).
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked --bin chaoslab

FROM debian:bookworm-slim
# A fixed numeric user, so Kubernetes' runAsNonRoot can check it; the
# manifests run pods as this same uid.
RUN groupadd --system --gid 10001 chaoslab \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin chaoslab
COPY --from=build /src/target/release/chaoslab /usr/local/bin/chaoslab
COPY --from=build /src/topologies /usr/share/chaoslab/topologies
USER 10001:10001
# node: 8080 service, 9090 metrics, 9091 control
EXPOSE 8080 9090 9091
ENTRYPOINT ["chaoslab"]
CMD ["--help"]
