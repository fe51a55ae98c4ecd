# Sourced by the benchmark scripts: `need_package COMMAND PACKAGE WHO` installs Debian's PACKAGE
# when COMMAND is missing (apt-get update first only when the package lists are empty).
need_package() {
  command -v "$1" >/dev/null && return 0
  echo "$3: installing $2 (Debian)" >&2
  if [ ! -d /var/lib/apt/lists ] || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]; then apt-get update -qq; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
