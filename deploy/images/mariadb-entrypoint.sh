#!/bin/bash
# Entrypoint for the locally built MariaDB image (Debian bookworm mariadb-server).
# Implements the subset of the official image's contract that our compose file
# and testcontainers use: MARIADB_*/MYSQL_* env vars (+ *_FILE), empty/random
# root password, database + user creation, /docker-entrypoint-initdb.d.
set -eo pipefail
shopt -s nullglob

note() { printf '%s [Note] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
fail() { printf '%s [ERROR] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; exit 1; }

# "docker run IMAGE --foo" means "mariadbd --foo"
if [ "${1:0:1}" = '-' ]; then set -- mariadbd "$@"; fi

wants_help() {
	local a
	for a; do case "$a" in -'?'|--help|--print-defaults|-V|--version) return 0 ;; esac; done
	return 1
}

if { [ "$1" = mariadbd ] || [ "$1" = mysqld ]; } && ! wants_help "$@"; then

	# read one effective server setting (config files + command line + defaults)
	server_setting() {
		local key="$1"; shift
		"$@" --verbose --help 2>/dev/null \
			| awk -v k="$key" '$1 == k && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'
	}
	# catch config errors early, with a readable message
	if ! err="$("$@" --verbose --help 2>&1 >/dev/null)"; then
		fail "mariadbd rejected its configuration: $err"
	fi
	DATADIR="$(server_setting datadir "$@")"
	SOCKET="$(server_setting socket "$@")"

	# as root: fix ownership, then re-run this script as the mysql user
	if [ "$(id -u)" = 0 ]; then
		mkdir -p "$DATADIR" "${SOCKET%/*}"
		find "$DATADIR" "${SOCKET%/*}" \! -user mysql -exec chown mysql:mysql '{}' +
		note "switching to user mysql"
		exec setpriv --reuid=mysql --regid=mysql --init-groups "$BASH_SOURCE" "$@"
	fi

	# VAR or VAR_FILE (docker secrets) -> VAR
	from_file() {
		local var="$1" file="${1}_FILE"
		if [ -n "${!var:-}" ] && [ -n "${!file:-}" ]; then fail "both $var and $file are set"; fi
		if [ -n "${!file:-}" ]; then export "$var"="$(< "${!file}")"; fi
		unset "$file"
	}
	# MARIADB_<name> wins, MYSQL_<name> is the fallback; both end up equal
	pick() {
		local m="MARIADB_$1" y="MYSQL_${2:-$1}"
		from_file "$m"; from_file "$y"
		export "$m"="${!m:-${!y:-${3:-}}}"
		export "$y"="${!m}"
	}
	pick ROOT_PASSWORD
	pick DATABASE
	pick USER
	pick PASSWORD
	pick ROOT_HOST ROOT_HOST '%'
	pick ALLOW_EMPTY_ROOT_PASSWORD ALLOW_EMPTY_PASSWORD
	pick RANDOM_ROOT_PASSWORD
	pick INITDB_SKIP_TZINFO
	: "${MARIADB_USER_HOST:=%}"

	sql() { # run SQL from stdin against the temporary server as root
		MYSQL_PWD="${ROOTPW_FOR_CLIENT:-}" mariadb --protocol=socket -uroot -hlocalhost --socket="$SOCKET" "$@"
	}
	esc() { local s=${1//\\/\\\\}; printf '%s' "${s//\'/\\\'}"; }

	if [ ! -d "$DATADIR/mysql" ]; then
		if [ -z "$MARIADB_ROOT_PASSWORD" ] && [ -z "$MARIADB_ALLOW_EMPTY_ROOT_PASSWORD" ] && [ -z "$MARIADB_RANDOM_ROOT_PASSWORD" ]; then
			fail "database is uninitialized and no root password option is set: set MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD (MYSQL_* accepted too)"
		fi
		if [ -n "$MARIADB_USER" ] && [ "$MARIADB_USER" != root ] && [ -z "$MARIADB_PASSWORD" ]; then
			fail "MARIADB_USER is set but MARIADB_PASSWORD is empty"
		fi

		note "initializing database files in $DATADIR"
		mariadb-install-db --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal \
			--cross-bootstrap --skip-test-db --skip-log-bin --expire-logs-days=0 \
			--default-time-zone=SYSTEM --enforce-storage-engine= \
			--loose-innodb_buffer_pool_load_at_startup=0 --loose-innodb_buffer_pool_dump_at_shutdown=0 \
			"${@:2}" > /dev/null

		note "starting temporary server (no TCP)"
		"$@" --skip-networking --socket="$SOCKET" --default-time-zone=SYSTEM --wsrep_on=OFF \
			--expire-logs-days=0 --skip-slave-start --loose-innodb_buffer_pool_load_at_startup=0 &
		pid=$!
		for i in $(seq 60); do
			if echo 'SELECT 1' | sql --database=mysql > /dev/null 2>&1; then break; fi
			kill -0 "$pid" 2>/dev/null || fail "temporary server exited"
			sleep 0.5
		done
		echo 'SELECT 1' | sql --database=mysql > /dev/null || fail "temporary server did not come up"

		if [ -z "$MARIADB_INITDB_SKIP_TZINFO" ]; then
			mariadb-tzinfo-to-sql --skip-write-binlog /usr/share/zoneinfo 2>/dev/null | sql --database=mysql
		fi
		if [ -n "$MARIADB_RANDOM_ROOT_PASSWORD" ] && [ -z "$MARIADB_ROOT_PASSWORD" ]; then
			MARIADB_ROOT_PASSWORD="$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 32)"
			note "GENERATED ROOT PASSWORD: $MARIADB_ROOT_PASSWORD"
		fi
		rootpw="$(esc "$MARIADB_ROOT_PASSWORD")"
		{
			echo "SET @@SESSION.SQL_LOG_BIN=0;"
			echo "SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');"
			# keep exactly root@localhost (+ root@ROOT_HOST), like the official image
			echo "DROP USER IF EXISTS root@'127.0.0.1', root@'::1';"
			echo "EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\\'', @@hostname, '\\'');"
			echo "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('$rootpw');"
			if [ -n "$MARIADB_ROOT_HOST" ] && [ "$MARIADB_ROOT_HOST" != localhost ]; then
				echo "CREATE USER 'root'@'$MARIADB_ROOT_HOST' IDENTIFIED BY '$rootpw';"
				echo "GRANT ALL ON *.* TO 'root'@'$MARIADB_ROOT_HOST' WITH GRANT OPTION;"
				echo "GRANT PROXY ON ''@'%' TO 'root'@'$MARIADB_ROOT_HOST' WITH GRANT OPTION;"
			fi
			echo "SET @@SESSION.SQL_LOG_BIN=1;"
			if [ -n "$MARIADB_DATABASE" ]; then
				note "creating database $MARIADB_DATABASE" >&2
				echo "CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\`;"
			fi
			if [ -n "$MARIADB_USER" ] && [ "$MARIADB_USER" != root ]; then
				note "creating user $MARIADB_USER" >&2
				echo "CREATE USER '$MARIADB_USER'@'$MARIADB_USER_HOST' IDENTIFIED BY '$(esc "$MARIADB_PASSWORD")';"
				if [ -n "$MARIADB_DATABASE" ]; then
					echo "GRANT ALL ON \`${MARIADB_DATABASE//_/\\_}\`.* TO '$MARIADB_USER'@'$MARIADB_USER_HOST';"
				fi
			fi
		} | sql --database=mysql --binary-mode
		ROOTPW_FOR_CLIENT="$MARIADB_ROOT_PASSWORD"

		# user scripts: *.sh (run if executable, else sourced), *.sql, *.sql.gz
		for f in /docker-entrypoint-initdb.d/*; do
			case "$f" in
				*.sh)     note "running $f"; if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
				*.sql)    note "running $f"; sql ${MARIADB_DATABASE:+--database="$MARIADB_DATABASE"} < "$f" ;;
				*.sql.gz) note "running $f"; gunzip -c "$f" | sql ${MARIADB_DATABASE:+--database="$MARIADB_DATABASE"} ;;
				*)        note "ignoring $f" ;;
			esac
		done

		note "stopping temporary server"
		kill "$pid"; wait "$pid" || true
		note "MariaDB init process done. Ready for start up."
	fi

	unset MARIADB_ROOT_PASSWORD MYSQL_ROOT_PASSWORD MARIADB_PASSWORD MYSQL_PASSWORD ROOTPW_FOR_CLIENT
fi

exec "$@"
