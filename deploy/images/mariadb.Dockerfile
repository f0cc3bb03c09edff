# MariaDB 10.11 from Debian bookworm's mariadb-server, on the local base rootfs
# that bootstrap.sh imports (no registry needed). Built by bootstrap.sh as
# local/mariadb:10.11 and mariadb:10.11; see README.md and
# docs/docker-offline.md (section 3) for the contract it keeps.
FROM local/bookworm-db:1
LABEL org.tidemq.offline-substitute="true" \
      org.opencontainers.image.title="mariadb" \
      org.opencontainers.image.description="Debian bookworm mariadb-server with an entrypoint compatible with the official image's MARIADB_*/MYSQL_* contract"
COPY mariadb-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
# The rootfs comes with Debian's defaults, which do not suit a container:
# bind-address is 127.0.0.1, and conf.d/ is read before mariadb.conf.d/, so
# a file mounted into conf.d/ (testcontainers' WithConfigFile) would be
# overridden. The mysqld_safe snippet is for a wrapper we do not use.
RUN set -eux; \
    chmod 755 /usr/local/bin/docker-entrypoint.sh; \
    rm -rf /var/lib/mysql; \
    mkdir -p /var/lib/mysql /run/mysqld /docker-entrypoint-initdb.d; \
    chown mysql:mysql /var/lib/mysql /run/mysqld; \
    chmod 1777 /run/mysqld; \
    rm -f /etc/mysql/mariadb.conf.d/50-mysqld_safe.cnf; \
    printf '[mariadbd]\nbind-address = 0.0.0.0\nskip-name-resolve\nhost-cache-size = 0\n' \
        > /etc/mysql/mariadb.conf.d/90-container.cnf; \
    printf '[client-server]\nsocket = /run/mysqld/mysqld.sock\n\n!includedir /etc/mysql/mariadb.conf.d/\n!includedir /etc/mysql/conf.d/\n' \
        > /etc/mysql/mariadb.cnf
# No VOLUME on purpose: every test container would leave an anonymous volume
# behind. Compose declares a named volume when it wants persistence.
EXPOSE 3306
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["mariadbd"]
