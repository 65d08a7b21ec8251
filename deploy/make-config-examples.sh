#!/usr/bin/env bash
# Writes deploy/config/ROLE.toml for each role from `tutti config example ROLE`: every
# option, explained, commented out. An integration test checks they are current.
set -euo pipefail
cd "$(dirname "$0")/.."
tutti=${TUTTI:-.build/debug/tutti}
mkdir -p deploy/config
for role in coordinator follower lyrics ctl; do
  "$tutti" config example "$role" > "deploy/config/$role.toml"
done
