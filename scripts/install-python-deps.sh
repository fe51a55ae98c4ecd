#!/usr/bin/env bash
# Installs the Python modules the tests' push stand-ins use (scripts/push-standin.py): h2 and
# cryptography, from PyPI, skipped when python3 already has them.
set -euo pipefail
if python3 -c 'import h2, cryptography' 2>/dev/null; then exit 0; fi
echo "install-python-deps: installing h2 and cryptography for python3" >&2
if ! python3 -m pip --version >/dev/null 2>&1 && ! python3 -m ensurepip --upgrade >/dev/null 2>&1; then
  # Debian's python3 has no ensurepip: pip comes as a package.
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
# Debian's own python3 refuses pip installs into the system (PEP 668) unless told.
python3 -m pip install --quiet --disable-pip-version-check h2 cryptography 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages h2 cryptography
python3 -c 'import h2, cryptography'
