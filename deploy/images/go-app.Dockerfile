# FROM scratch image for one of Tide's Go daemons (nameserver, broker, and the
# services later). The binary is built on the host with CGO_ENABLED=0
# (`make build`), so the image needs no builder image and no registry.
# build-apps.sh stages the build context:
#
#   <ctx>/<BIN>                  static binary from bin/
#   <ctx>/ca-certificates.crt    the host's CA bundle (only for HTTPS clients)
#   <ctx>/zoneinfo.zip           $(go env GOROOT)/lib/time/zoneinfo.zip
#   <ctx>/data/                  empty; becomes the writable /data
#
#   docker build -f deploy/images/go-app.Dockerfile --build-arg BIN=broker -t tide/broker:dev <ctx>
#
# The binary is always /app (exec-form ENTRYPOINT cannot expand a build arg),
# so a compose healthcheck or command reads the same for every service. The
# process runs as 65532:65532 with HOME and the working directory at /data,
# where the NameServer's kvConfig and the broker's store go by default.
FROM scratch
ARG BIN
ARG VERSION=dev
LABEL org.opencontainers.image.title="${BIN}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/tidemq/tide" \
      org.tidemq.app="${BIN}"
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# scratch has no /usr/share/zoneinfo; Go's time package reads $ZONEINFO.
COPY zoneinfo.zip /usr/local/go/lib/time/zoneinfo.zip
COPY --chown=65532:65532 data /data
COPY ${BIN} /app
ENV ZONEINFO=/usr/local/go/lib/time/zoneinfo.zip \
    HOME=/data
USER 65532:65532
WORKDIR /data
ENTRYPOINT ["/app"]
