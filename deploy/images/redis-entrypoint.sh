#!/bin/sh
# Entrypoint for the locally built Redis image (Debian bookworm redis-server).
# Same argument handling as the official image, so testcontainers' redis
# module options (WithConfigFile, WithLogLevel, ...) behave the same.
set -e

# "IMAGE --loglevel debug" or "IMAGE /path/redis.conf" -> run redis-server with them
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi

if [ "$1" = redis-server ]; then
	# The official image builds redis with protected mode off; Debian's binary
	# has it on, which refuses every non-loopback client when no password is set.
	case " $* " in
		*" --protected-mode "*) ;;
		*) if ! { [ "${2%.conf}" != "${2:-}" ] && grep -qs '^protected-mode' "$2"; }; then
			set -- "$@" --protected-mode no
		   fi ;;
	esac
	if [ "$(id -u)" = 0 ]; then
		find . \! -user redis -exec chown redis: '{}' +
		exec setpriv --reuid=redis --regid=redis --init-groups "$@"
	fi
fi

exec "$@"
