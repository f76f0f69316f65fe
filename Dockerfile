# syntax=docker/dockerfile:1
# leasegate: a static binary in a minimal image, running as a non-root user.
#   docker build --build-arg VERSION=v1.2.3 -t leasegate:v1.2.3 .
# See docs/deployment.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/leasegate/leasegate/server.Version=${VERSION}" \
      -o /out/leasegate ./cmd/leasegate

# distroless/static has no shell and no package manager; its "nonroot"
# user is uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/leasegate /usr/local/bin/leasegate
USER 65532:65532
# Inside a container the gateway must listen on all interfaces to be
# reachable through a published port; it then needs a real Redis
# (LEASEGATE_REDIS_URL or the Sentinel/Cluster settings).
ENV LEASEGATE_ADDR=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/leasegate", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/leasegate"]
CMD ["serve"]
