#!/usr/bin/env bash
# Verifies the systemd units with `systemd-analyze verify` (CI runs it: .ci/run): unit
# syntax, unknown or misspelt settings, the dependencies between the units, and that
# ExecStart='s program exists. Where node is not /usr/bin/node, copies of the units with
# that path replaced are verified instead. Any message about a unit fails the check
# (verify exits 0 on some problems it only prints).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here"
node="$(command -v node)"
if [ "$node" != /usr/bin/node ]; then
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
  for f in "$here"/*.service; do sed "s#/usr/bin/node#$node#" "$f" >"$dir/$(basename "$f")"; done
fi
out="$(cd "$dir" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no ./payd-migrate.service ./payd.service 2>&1)" || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "systemd units verified: payd.service, payd-migrate.service"
