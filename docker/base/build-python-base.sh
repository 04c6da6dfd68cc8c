#!/usr/bin/env bash
# Build a LOCAL stand-in for the public image python:3.11-slim-bookworm.
#
# Only for machines that cannot reach a container registry: the image is assembled
# from Debian bookworm packages with debootstrap and `docker import`ed under the
# official tag, so Dockerfiles saying `FROM python:3.11-slim-bookworm` build unchanged.
# Anywhere with registry access, just `docker pull python:3.11-slim-bookworm` instead.
#
# Idempotent: exits 0 immediately when the tag already exists (unless --force).
# See docker/base/README.md.
set -euo pipefail

SCRIPT_NAME="build-python-base"
IMAGE_TAG="${PYTHON_IMAGE:-python:3.11-slim-bookworm}"
CACHE_KEY_NAME="python-3.11-slim-bookworm"
INCLUDE_PKGS="python3.11,python3-venv,python3-pip,ca-certificates,libsqlite3-0"

# shellcheck source-path=SCRIPTDIR source=_common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/_common.sh"

customize_rootfs() {
    local r="${ROOTFS}"
    log "making it look like the official image (/usr/local/bin/python*, pip*)"
    [ -x "$r/usr/bin/python3.11" ] || die "python3.11 missing from rootfs"

    # The official image lives in /usr/local; point the same names at Debian's python.
    mkdir -p "$r/usr/local/bin"
    ln -sfn /usr/bin/python3.11 "$r/usr/local/bin/python3.11"
    ln -sfn python3.11 "$r/usr/local/bin/python3"
    ln -sfn python3 "$r/usr/local/bin/python"
    # pip as small real files (not symlinks) so a later `pip install -U pip`, which
    # rewrites /usr/local/bin/pip*, replaces these instead of writing through a link
    # into /usr/bin.
    local p
    for p in pip pip3 pip3.11; do
        printf '#!/bin/sh\nexec /usr/bin/python3.11 -m pip "$@"\n' >"$r/usr/local/bin/$p"
        chmod 0755 "$r/usr/local/bin/$p"
    done

    # Debian marks its python as externally managed (PEP 668); the official image does
    # not, and project Dockerfiles run plain `pip install` as root.
    rm -f "$r"/usr/lib/python3*/EXTERNALLY-MANAGED

    # Quick self-check inside the rootfs.
    in_chroot /usr/local/bin/python -c 'import sqlite3, ssl, venv, ensurepip, pip' ||
        die "python self-check failed inside rootfs"
    in_chroot /usr/local/bin/pip --version >/dev/null || die "pip self-check failed inside rootfs"
}

import_changes() {
    IMPORT_CHANGES=(
        "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
        "ENV LANG=C.UTF-8"
        'CMD ["python3"]'
    )
}

main_build "$@"
