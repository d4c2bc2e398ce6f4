# Sourced by the ensure_*.sh scripts. `apt_install PACKAGE...` installs
# Debian packages through apt-get when we may (root, or sudo without a
# password). Returns 0 once installed, 1 when apt-get failed, 2 when we may
# not install here.
apt_install() {
    local install="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $*"
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "Installing $*."
        sh -c "$install" >/dev/null || return 1
    elif command -v apt-get >/dev/null && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        echo "Installing $* with sudo."
        sudo sh -c "$install" >/dev/null || return 1
    else
        return 2
    fi
}
