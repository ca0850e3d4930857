#!/usr/bin/env bash
# Interop tests against `kdeck serve`: installs kcat and a Python venv with pinned clients
# (idempotent: skips what is there), builds kdeck, runs every scenario of interop.py.
set -euo pipefail
cd "$(dirname "$0")/../.."

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v kcat >/dev/null 2>&1; then
  echo "installing kcat"
  as_root apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi

target=${CARGO_TARGET_DIR:-target}
venv=$target/interop-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "creating $venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    as_root apt-get update -qq >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
fi
"$venv/bin/pip" install -q --disable-pip-version-check confluent-kafka==2.16.1 kafka-python==3.0.12

cargo build --locked -q --bin kdeck
"$venv/bin/python" tests/interop/interop.py "$target/debug/kdeck" "$@"
