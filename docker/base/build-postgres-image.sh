#!/usr/bin/env bash
# Build a LOCAL stand-in for the public image pgvector/pgvector:pg17 (override the tag with
# POSTGRES_IMAGE=...): PostgreSQL 17 with the pgvector extension (0.8), what the team store
# (EVOMEM_DATABASE_URL=postgresql://...) runs on.
#
# Only for machines that cannot reach a container registry: the image is assembled from
# Debian 13 "trixie" packages (postgresql-17 and postgresql-17-pgvector; bookworm has no
# pgvector package) with debootstrap and `docker import`ed under the official tag, so compose
# files using `image: pgvector/pgvector:pg17` work unchanged. Anywhere with registry access,
# just `docker pull pgvector/pgvector:pg17` instead.
#
# It behaves like the official postgres image for what EvoMem uses: POSTGRES_PASSWORD
# (or POSTGRES_PASSWORD_FILE), POSTGRES_USER, POSTGRES_DB, POSTGRES_INITDB_ARGS, the scripts
# of /docker-entrypoint-initdb.d (*.sh, *.sql) on the first start, PGDATA in
# /var/lib/postgresql/data, `postgres` run as the postgres user, listening on every address
# with scram-sha-256 passwords; `pg_isready` is on PATH for healthchecks.
#
# Idempotent: exits 0 immediately when the tag already exists (unless --force).
# See docker/base/README.md.
set -euo pipefail

SCRIPT_NAME="build-postgres-image"
IMAGE_TAG="${POSTGRES_IMAGE:-pgvector/pgvector:pg17}"
CACHE_KEY_NAME="pgvector-pg17-trixie"
DEBIAN_SUITE="trixie"
INCLUDE_PKGS="postgresql-17,postgresql-17-pgvector,gosu"

# shellcheck source-path=SCRIPTDIR source=_common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/_common.sh"

customize_rootfs() {
    local r="${ROOTFS}"
    log "adding an official-image-like docker-entrypoint.sh and PGDATA"
    [ -x "$r/usr/lib/postgresql/17/bin/postgres" ] || die "postgres 17 missing from rootfs"
    [ -f "$r/usr/share/postgresql/17/extension/vector.control" ] || die "pgvector missing from rootfs"
    in_chroot getent passwd postgres >/dev/null || die "postgres user missing from rootfs"

    # Debian's cluster made by the package's postinst (/var/lib/postgresql/17/main) is not used:
    # the entrypoint makes one in PGDATA on first start, like the official image.
    rm -rf "$r/var/lib/postgresql/17" "$r/etc/postgresql/17"
    mkdir -p "$r/var/lib/postgresql/data" "$r/var/run/postgresql" "$r/docker-entrypoint-initdb.d"
    in_chroot chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
    chmod 0700 "$r/var/lib/postgresql/data"
    chmod 2777 "$r/var/run/postgresql"

    mkdir -p "$r/usr/local/bin"
    cat >"$r/usr/local/bin/docker-entrypoint.sh" <<'ENTRY'
#!/bin/bash
# The official postgres image's entrypoint, in short: first start initialises PGDATA
# (POSTGRES_USER / POSTGRES_PASSWORD[_FILE] / POSTGRES_DB / POSTGRES_INITDB_ARGS), runs
# /docker-entrypoint-initdb.d/*.sh and *.sql once, then execs postgres as the postgres user.
set -Eeo pipefail
if [ "${1:0:1}" = '-' ]; then
    set -- postgres "$@"
fi
if [ "$1" != 'postgres' ]; then
    exec "$@"
fi
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
export PGDATA
if [ "$(id -u)" = '0' ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql 2>/dev/null || true
    chmod 0700 "$PGDATA" 2>/dev/null || true
    exec gosu postgres "$BASH_SOURCE" "$@"
fi
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    POSTGRES_PASSWORD="$(< "$POSTGRES_PASSWORD_FILE")"
fi
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "${POSTGRES_HOST_AUTH_METHOD:-}" != 'trust' ]; then
        echo >&2 'error: the database is uninitialized and POSTGRES_PASSWORD is not set' \
            '(or POSTGRES_HOST_AUTH_METHOD=trust, for tests only)'
        exit 1
    fi
    pwfile="$(mktemp)"
    printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
    # shellcheck disable=SC2086
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
        --auth-host="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" -E UTF8 --locale=C.UTF-8 \
        ${POSTGRES_INITDB_ARGS:-} >/dev/null
    rm -f "$pwfile"
    printf 'host all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"
    printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.auto.conf"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" -w start >/dev/null
    if [ "$POSTGRES_DB" != 'postgres' ]; then
        psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U "$POSTGRES_USER" -d postgres -q \
            -c "CREATE DATABASE \"$POSTGRES_DB\""
    fi
    for f in /docker-entrypoint-initdb.d/*; do
        case "$f" in
            *.sh) echo "running $f"; . "$f" ;;
            *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U "$POSTGRES_USER" -d "$POSTGRES_DB" -q -f "$f" ;;
            *) ;;
        esac
    done
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    echo 'PostgreSQL init process complete; ready for start up.'
fi
# `docker stop` sends SIGTERM, which PostgreSQL reads as a "smart" shutdown that waits for every
# client to leave (a connection pool never does); the official image sets STOPSIGNAL SIGINT
# ("fast": roll back, disconnect, checkpoint), which `docker import` cannot, so translate here.
"$@" &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null' TERM INT
wait "$pid"
rc=$?
if kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    rc=$?
fi
exit "$rc"
ENTRY
    chmod 0755 "$r/usr/local/bin/docker-entrypoint.sh"
    in_chroot /usr/lib/postgresql/17/bin/postgres --version >/dev/null || die "postgres self-check failed inside rootfs"
}

import_changes() {
    IMPORT_CHANGES=(
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/lib/postgresql/17/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        "ENV LANG=C.UTF-8"
        "ENV PGDATA=/var/lib/postgresql/data"
        "VOLUME /var/lib/postgresql/data"
        "EXPOSE 5432"
        'ENTRYPOINT ["docker-entrypoint.sh"]'
        'CMD ["postgres"]'
    )
}

main_build "$@"
