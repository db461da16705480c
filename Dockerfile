# sluice's container image: a static binary on an empty base, run as a user
# without privileges, with a read-only root filesystem. docs/deploy.md.
#
#   docker build -t sluice .
#   docker run --read-only -p 8080:8080 -p 127.0.0.1:9090:9090 \
#     -v "$PWD/sluice.yaml:/etc/sluice/sluice.yaml:ro" sluice
#
# The version sluice names is the one make build finds in the checkout's
# git history (.git is in the build context); without it, give it:
#   docker build --build-arg VERSION=v1.2.0 --build-arg REVISION=$(git rev-parse HEAD) -t sluice .

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
ARG REVISION
# make build: CGO_ENABLED=0 (static), -trimpath, the version set with -ldflags -X.
RUN if [ -n "$VERSION" ]; then make build VERSION="$VERSION" REVISION="$REVISION" MODIFIED=false; else make build; fi && \
    CGO_ENABLED=0 go build -trimpath -o bin/claims ./deploy/compose/claims

# The demo's claims service alone, the upstream of deploy/compose.
FROM scratch AS claims
COPY --from=build /src/bin/claims /claims
USER 65532:65532
EXPOSE 9000
ENTRYPOINT ["/claims"]

FROM scratch
# An https upstream or Redis over TLS needs the system's CA certificates.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/bin/sluice /usr/local/bin/sluice
# Not root; the numeric id works without /etc/passwd.
USER 65532:65532
# listen and admin in the configuration (the admin port: keep it private).
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/sluice", "serve"]
CMD ["--config", "/etc/sluice/sluice.yaml"]
