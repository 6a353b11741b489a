# shellcheck shell=bash
# Sourced by scripts/setup.sh and zk/install.sh: install Debian packages, only the missing ones.
#
# apt-get update runs only when there are no package lists yet, or when an install
# fails (stale lists name versions the mirror no longer has), so a machine that has
# everything makes no network call at all.

apt_is_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

apt_install_missing() {
    local missing=() pkg sudo=""
    for pkg in "$@"; do
        apt_is_installed "$pkg" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
        $sudo apt-get update -q
    fi
    echo "Installing Debian packages: ${missing[*]}"
    if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        echo "apt-get install failed; refreshing the package lists and trying once more" >&2
        $sudo apt-get update -q
        $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}
