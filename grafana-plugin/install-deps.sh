#!/usr/bin/env bash
# Installs the plugin frontend's npm dependencies (the exact set in
# package-lock.json: @grafana/* 13.2.2, React 19) on a clean machine.
# Takes about 1-2 minutes with a cold npm cache. Needs Node >= 20.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null; then
  echo "install-deps.sh: npm not found; install Node.js 20 or newer" >&2
  exit 1
fi
if [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "grafana-plugin: node_modules is up to date"
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
