#!/usr/bin/env bash
# Installs the Python modules the tests use, from PyPI, each skipped when present: h2 and
# cryptography for the push stand-ins (scripts/push-standin.py); moto's S3 server (below).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import h2, cryptography' 2>/dev/null; then
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
fi

# moto's S3-compatible server for the object-storage tests (CallsObjectStorageTests), in its own
# venv (.build/moto-venv: it brings flask, boto3 and more, kept out of the system python).
venv=.build/moto-venv
if [ ! -x "$venv/bin/moto_server" ]; then
  echo "install-python-deps: installing moto[server] into $venv" >&2
  if ! python3 -m venv "$venv" 2>/dev/null; then  # Debian's python3 keeps venv in a package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]"
fi
