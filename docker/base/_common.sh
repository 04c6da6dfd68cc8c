# shellcheck shell=bash
# Shared helpers for build-python-base.sh and build-redis-image.sh.
# Sourced, not executed. Callers must set: SCRIPT_NAME, IMAGE_TAG, CACHE_KEY_NAME,
# INCLUDE_PKGS, and define customize_rootfs() and import_changes().
#
# Environment knobs (all optional):
#   EVOMEM_IMAGE_CACHE      rootfs tarball cache dir (default ~/.cache/evomem-images)
#   EVOMEM_BUILD_TMP        where the temporary rootfs is assembled (default /var/tmp)
#   DEBIAN_MIRROR           Debian mirror (default: what the host's apt uses, else deb.debian.org)
#   DEBIAN_SECURITY_MIRROR  security mirror (default: host's, else <mirror>-security)
#   DEBIAN_SUITE            default bookworm
#   EVOMEM_SKIP_UPGRADE=1   skip applying bookworm-updates/-security on top of debootstrap

DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
CACHE_DIR="${EVOMEM_IMAGE_CACHE:-${HOME:-/root}/.cache/evomem-images}"
BUILD_TMP="${EVOMEM_BUILD_TMP:-/var/tmp}"

FORCE=0
NO_CACHE=0
ROOTFS=""
PARTIAL_TAR=""
CHILD_PID=""
BUILD_LOG=""

log() { printf '[%s] %s\n' "${SCRIPT_NAME}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

usage() {
    cat >&2 <<EOF
Usage: ${SCRIPT_NAME} [--force] [--no-cache]
Builds a LOCAL stand-in for ${IMAGE_TAG} (Debian ${DEBIAN_SUITE} via debootstrap).
  --force     re-import the image even if ${IMAGE_TAG} already exists
              (reuses the cached rootfs tarball if there is one)
  --no-cache  also discard the cached rootfs tarball and re-run debootstrap
              (implies --force)
Cache dir: ${CACHE_DIR}  (override with EVOMEM_IMAGE_CACHE)
EOF
}

parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --force) FORCE=1 ;;
            --no-cache) NO_CACHE=1; FORCE=1 ;;
            -h|--help) usage; exit 0 ;;
            *) usage; die "unknown argument: $1" ;;
        esac
        shift
    done
}

# Print the first Debian (non-security) mirror URI the host's apt is configured with.
detect_host_mirror() {
    local want="$1" # "main" or "security"
    local files=() f
    [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ ${#files[@]} -gt 0 ] || return 0
    for f in "${files[@]}"; do
        case "$f" in
            *.sources)
                # deb822: take URIs from stanzas whose Suites mention the wanted suite.
                awk -v want="$want" -v suite="$DEBIAN_SUITE" '
                    function flush() {
                        if (uris != "" && types ~ /(^|[ \t])deb([ \t]|$)/) {
                            issec = (suites ~ (suite "-security"))
                            ismain = (suites ~ ("(^|[ \t])" suite "([ \t]|$)"))
                            if ((want == "security" && issec) || (want == "main" && ismain)) {
                                split(uris, u, /[ \t]+/); print u[1]; exit
                            }
                        }
                        uris = ""; suites = ""; types = ""
                    }
                    /^[ \t]*#/ { next }
                    /^[ \t]*$/ { flush(); next }
                    tolower($1) == "types:"  { sub(/^[^:]*:[ \t]*/, ""); types = $0 }
                    tolower($1) == "uris:"   { sub(/^[^:]*:[ \t]*/, ""); uris = $0 }
                    tolower($1) == "suites:" { sub(/^[^:]*:[ \t]*/, ""); suites = $0 }
                    END { flush() }
                ' "$f"
                ;;
            *)
                # one-line format: deb [opts] URI suite components...
                awk -v want="$want" -v suite="$DEBIAN_SUITE" '
                    $1 != "deb" { next }
                    {
                        i = 2
                        if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
                        uri = $i; s = $(i + 1)
                        if ((want == "security" && s == suite "-security") || (want == "main" && s == suite)) { print uri; exit }
                    }
                ' "$f"
                ;;
        esac
    done | head -n1
}

resolve_mirrors() {
    if [ -z "${DEBIAN_MIRROR:-}" ]; then
        DEBIAN_MIRROR="$(detect_host_mirror main || true)"
        DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    fi
    DEBIAN_MIRROR="${DEBIAN_MIRROR%/}"
    if [ -z "${DEBIAN_SECURITY_MIRROR:-}" ]; then
        DEBIAN_SECURITY_MIRROR="$(detect_host_mirror security || true)"
        DEBIAN_SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-${DEBIAN_MIRROR}-security}"
    fi
    DEBIAN_SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR%/}"
}

require_docker() {
    command -v docker >/dev/null 2>&1 || die "docker CLI not found on PATH"
    docker info >/dev/null 2>&1 || die "cannot talk to the Docker daemon (is it running / are you in the docker group?)"
}

image_present() { docker image inspect "${IMAGE_TAG}" >/dev/null 2>&1; }

ensure_root() {
    [ "$(id -u)" = 0 ] || die "building the rootfs needs root (debootstrap/chroot); re-run with sudo"
}

ensure_debootstrap() {
    if command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ]; then
        return 0
    fi
    log "debootstrap not found; installing it with apt-get"
    command -v apt-get >/dev/null 2>&1 || die "debootstrap missing and apt-get unavailable; install debootstrap manually"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}

# Cache file: keyed by a hash of the rootfs recipe (suite, packages, mirrors and the bodies
# of the functions that shape the rootfs), so changing the recipe invalidates the cache
# automatically while comment/log-only edits do not.
cache_file() {
    local key
    key="$({
        printf '%s|%s|%s|%s|%s\n' "$DEBIAN_SUITE" "$INCLUDE_PKGS" "$DEBIAN_MIRROR" \
            "$DEBIAN_SECURITY_MIRROR" "${EVOMEM_SKIP_UPGRADE:-0}"
        declare -f common_rootfs_setup customize_rootfs final_cleanup_rootfs
    } | sha256sum | cut -c1-12)"
    printf '%s/%s-%s.rootfs.tar' "$CACHE_DIR" "$CACHE_KEY_NAME" "$key"
}

# Unmount anything still mounted below the rootfs, then delete it (never crossing filesystems).
cleanup_rootfs() {
    [ -z "${PARTIAL_TAR}" ] || rm -f "${PARTIAL_TAR}"
    [ -n "${ROOTFS}" ] && [ -d "${ROOTFS}" ] || return 0
    local m
    # reverse order so nested mounts go first
    awk -v r="${ROOTFS}" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf --one-file-system "${ROOTFS}"
    ROOTFS=""
}

CHROOT_ENV=(/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 HOME=/root)

in_chroot() { chroot "${ROOTFS}" "${CHROOT_ENV[@]}" "$@"; }

# Run a long step in its own process group with output appended to BUILD_LOG, so that
# Ctrl-C / SIGTERM stops it promptly (see on_signal) instead of after it finishes.
run_logged() {
    local rc=0
    printf '\n### %s\n' "$*" >>"${BUILD_LOG}"
    setsid "$@" >>"${BUILD_LOG}" 2>&1 </dev/null &
    CHILD_PID=$!
    wait "${CHILD_PID}" || rc=$?
    CHILD_PID=""
    return "$rc"
}

on_signal() {
    trap '' INT TERM
    if [ -n "${CHILD_PID}" ]; then
        log "interrupted; stopping ${CHILD_PID} and cleaning up"
        kill -TERM -- "-${CHILD_PID}" 2>/dev/null || true
        wait "${CHILD_PID}" 2>/dev/null || true
    fi
    exit 130
}

step_failed() {
    tail -n 30 "${BUILD_LOG}" >&2 || true
    die "$1 (full log: ${BUILD_LOG})"
}

# Debian-docker-image-like tweaks shared by both images.
common_rootfs_setup() {
    local r="${ROOTFS}"
    # Same minimisation config the official debian:*-slim images ship.
    mkdir -p "$r/etc/dpkg/dpkg.cfg.d" "$r/etc/apt/apt.conf.d"
    cat >"$r/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    cat >"$r/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    printf 'Acquire::Languages "none";\n' >"$r/etc/apt/apt.conf.d/docker-no-languages"
    printf 'APT::Install-Recommends "false";\n' >"$r/etc/apt/apt.conf.d/docker-no-recommends"
    # Never start services inside image builds.
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
    chmod 0755 "$r/usr/sbin/policy-rc.d"

    # Same apt sources layout as the official images (deb822, deb.debian.org) so that
    # `apt-get update && apt-get install ...` in downstream Dockerfiles behaves normally.
    rm -f "$r/etc/apt/sources.list"
    cat >"$r/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: ${DEBIAN_MIRROR}
Suites: ${DEBIAN_SUITE} ${DEBIAN_SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_SECURITY_MIRROR}
Suites: ${DEBIAN_SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

    if [ "${EVOMEM_SKIP_UPGRADE:-0}" != 1 ]; then
        log "applying ${DEBIAN_SUITE}-updates / ${DEBIAN_SUITE}-security (set EVOMEM_SKIP_UPGRADE=1 to skip)"
        cp -L /etc/resolv.conf "$r/etc/resolv.conf"
        mount -t proc proc "$r/proc"
        local before
        before="$(grep -c '^Unpacking' "${BUILD_LOG}" || true)"
        run_logged chroot "$r" "${CHROOT_ENV[@]}" apt-get update -q ||
            step_failed "apt-get update inside the rootfs failed"
        run_logged chroot "$r" "${CHROOT_ENV[@]}" apt-get -y -q -o Dpkg::Use-Pty=0 \
            -o Dpkg::Options::=--force-confold dist-upgrade ||
            step_failed "apt-get dist-upgrade inside the rootfs failed"
        log "  $(($(grep -c '^Unpacking' "${BUILD_LOG}" || true) - before)) package updates applied"
        umount "$r/proc"
        : >"$r/etc/resolv.conf"
    fi
}

final_cleanup_rootfs() {
    local r="${ROOTFS}"
    log "trimming rootfs (apt lists/caches, docs, man pages, locales, logs)"
    rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
        "$r"/var/log/apt/* "$r"/var/log/*.log "$r"/var/cache/ldconfig/aux-cache \
        "$r"/tmp/* "$r"/var/tmp/* "$r"/root/.cache
    mkdir -p "$r/var/lib/apt/lists/partial" "$r/var/cache/apt/archives/partial"
    find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
    find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
    rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/groff/* "$r"/usr/share/lintian/*
    find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
    find "$r" -xdev -name '__pycache__' -type d -prune -exec rm -rf {} + 2>/dev/null || true
    # machine-id must be empty in images; docker provides hostname/hosts/resolv.conf.
    : >"$r/etc/machine-id" 2>/dev/null || true
    rm -f "$r/var/lib/dbus/machine-id"
    : >"$r/etc/resolv.conf"
    rm -f "$r/etc/hostname"
}

build_rootfs_tarball() {
    local out="$1" tmp_tar
    ensure_root
    ensure_debootstrap
    mkdir -p "$BUILD_TMP" "$CACHE_DIR"
    ROOTFS="$(mktemp -d "${BUILD_TMP%/}/evomem-${CACHE_KEY_NAME}.XXXXXX")"
    chmod 0755 "${ROOTFS}" # mktemp -d makes it 0700, which would become the image's /
    trap cleanup_rootfs EXIT
    trap on_signal INT TERM
    BUILD_LOG="${CACHE_DIR}/${CACHE_KEY_NAME}.build.log"
    : >"${BUILD_LOG}"

    log "debootstrap ${DEBIAN_SUITE} (minbase + ${INCLUDE_PKGS}) from ${DEBIAN_MIRROR} into ${ROOTFS}"
    log "  (downloads ~30-60 MB of .debs; about 1-2 minutes)"
    local t0=$SECONDS
    run_logged debootstrap --variant=minbase --include="${INCLUDE_PKGS}" \
        "${DEBIAN_SUITE}" "${ROOTFS}" "${DEBIAN_MIRROR}" || step_failed "debootstrap failed"
    log "debootstrap done in $((SECONDS - t0))s"

    common_rootfs_setup
    customize_rootfs
    final_cleanup_rootfs

    log "writing rootfs tarball to ${out} (build log: ${BUILD_LOG})"
    tmp_tar="${out}.partial.$$"
    PARTIAL_TAR="${tmp_tar}"
    tar --numeric-owner --xattrs --xattrs-include='security.capability' \
        -C "${ROOTFS}" -cf "${tmp_tar}" .
    mv -f "${tmp_tar}" "${out}"
    PARTIAL_TAR=""
    cleanup_rootfs
    trap - EXIT INT TERM
}

main_build() {
    parse_args "$@"
    require_docker
    if [ "$FORCE" = 0 ] && image_present; then
        log "${IMAGE_TAG} already present ($(docker image inspect -f '{{.Id}}' "${IMAGE_TAG}" | cut -c1-19)); nothing to do (use --force to rebuild)"
        exit 0
    fi
    resolve_mirrors
    local tarball t0=$SECONDS
    tarball="$(cache_file)"
    if [ "$NO_CACHE" = 1 ]; then
        rm -f "$CACHE_DIR/${CACHE_KEY_NAME}"-*.rootfs.tar
    fi
    if [ -s "$tarball" ]; then
        log "using cached rootfs ${tarball}"
    else
        # drop stale tarballs from older recipes
        rm -f "$CACHE_DIR/${CACHE_KEY_NAME}"-*.rootfs.tar
        build_rootfs_tarball "$tarball"
    fi

    local changes=()
    import_changes # fills IMPORT_CHANGES
    changes=("${IMPORT_CHANGES[@]}")
    changes+=("LABEL org.opencontainers.image.description=\"Local stand-in for ${IMAGE_TAG} built by EvoMem docker/base/$(basename "$0") from Debian ${DEBIAN_SUITE} packages; not the official image\"")
    changes+=("LABEL io.evomem.standin=true")
    local args=() c
    for c in "${changes[@]}"; do args+=(--change "$c"); done
    local old_id new_id
    old_id="$(docker image inspect -f '{{.Id}}' "${IMAGE_TAG}" 2>/dev/null || true)"
    log "docker import -> ${IMAGE_TAG}"
    new_id="$(docker import "${args[@]}" - "${IMAGE_TAG}" <"$tarball")"
    if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
        # the previous stand-in is now untagged; drop it unless something still uses it
        docker rmi "$old_id" >/dev/null 2>&1 || true
    fi
    log "done in $((SECONDS - t0))s: ${IMAGE_TAG} ($(docker image inspect -f '{{.Size}}' "${IMAGE_TAG}" | awk '{printf "%.0f MB", $1/1e6}'))"
}
