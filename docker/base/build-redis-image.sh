#!/usr/bin/env bash
# Build a LOCAL stand-in for the public image redis:7-bookworm (override the tag with
# REDIS_IMAGE=...).
#
# Only for machines that cannot reach a container registry: the image is assembled
# from Debian bookworm's redis-server (7.0.x) with debootstrap and `docker import`ed
# under the official tag, so compose files using `image: redis:7-bookworm` work
# unchanged (`redis-server` and `redis-cli` are on PATH for healthchecks).
# Anywhere with registry access, just `docker pull redis:7-bookworm` instead.
#
# Idempotent: exits 0 immediately when the tag already exists (unless --force).
# See docker/base/README.md.
set -euo pipefail

SCRIPT_NAME="build-redis-image"
IMAGE_TAG="${REDIS_IMAGE:-redis:7-bookworm}"
CACHE_KEY_NAME="redis-7-bookworm"
INCLUDE_PKGS="redis-server,redis-tools,gosu"

# shellcheck source-path=SCRIPTDIR source=_common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/_common.sh"

customize_rootfs() {
    local r="${ROOTFS}"
    log "adding official-image-like /data and docker-entrypoint.sh"
    if [ ! -x "$r/usr/bin/redis-server" ] || [ ! -x "$r/usr/bin/redis-cli" ]; then
        die "redis-server/redis-cli missing from rootfs"
    fi
    in_chroot getent passwd redis >/dev/null || die "redis user missing from rootfs"

    mkdir -p "$r/data"
    in_chroot chown redis:redis /data

    # Mirrors the official redis image entrypoint: run as the redis user, own /data,
    # and (like the official build, which compiles protected-mode off by default)
    # pass --protected-mode no so other containers can connect without a password.
    # User-supplied options come after it and therefore win.
    mkdir -p "$r/usr/local/bin"
    cat >"$r/usr/local/bin/docker-entrypoint.sh" <<'ENTRY'
#!/bin/sh
set -e
# first arg is `-f` or `--some-option`, or a config file: prepend redis-server
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
    set -- redis-server "$@"
fi
if [ "$1" = 'redis-server' ] && [ "$(id -u)" = '0' ]; then
    find . \! -user redis -exec chown redis '{}' + 2>/dev/null || true
    exec gosu redis "$0" "$@"
fi
if [ "$1" = 'redis-server' ]; then
    shift
    if [ "${1%.conf}" != "${1:-}" ] || [ "${1:-}" = "-" ]; then
        conf="$1"; shift
        set -- redis-server "$conf" --protected-mode no "$@"
    else
        set -- redis-server --protected-mode no "$@"
    fi
fi
umask 0077
exec "$@"
ENTRY
    chmod 0755 "$r/usr/local/bin/docker-entrypoint.sh"
    in_chroot redis-server --version >/dev/null || die "redis-server self-check failed inside rootfs"
}

import_changes() {
    IMPORT_CHANGES=(
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        "ENV LANG=C.UTF-8"
        "VOLUME /data"
        "WORKDIR /data"
        "EXPOSE 6379"
        'ENTRYPOINT ["docker-entrypoint.sh"]'
        'CMD ["redis-server", "--protected-mode", "no"]'
    )
}

main_build "$@"
