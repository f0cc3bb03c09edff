# Redis 7.0 from Debian bookworm's redis-server, on the local base rootfs that
# bootstrap.sh imports (no registry needed). Built by bootstrap.sh as
# local/redis:7.0 and redis:7.0; see README.md and docs/docker-offline.md
# (section 4). Debian's /etc/redis/redis.conf (daemonize, loopback bind, log
# file) is deliberately not used: redis-server runs with its built-in
# defaults, and the entrypoint adds --protected-mode no as the official
# image's build does.
FROM local/bookworm-db:1
LABEL org.tidemq.offline-substitute="true" \
      org.opencontainers.image.title="redis" \
      org.opencontainers.image.description="Debian bookworm redis-server with an entrypoint compatible with the official image"
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN set -eux; \
    chmod 755 /usr/local/bin/docker-entrypoint.sh; \
    mkdir -p /data; \
    chown redis:redis /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
