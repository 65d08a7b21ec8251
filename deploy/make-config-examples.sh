#!/usr/bin/env bash
# Writes deploy/config/ROLE.toml for each role from `tutti config example ROLE`: every
# option, explained, commented out; and the lean follower's table of its options
# (Sources/TuttiFollower/FollowerCommand+OptionTable.swift), so that it starts without
# ArgumentParser's help dump. Tests check they are current; run after changing an option.
set -euo pipefail
cd "$(dirname "$0")/.."
tutti=${TUTTI:-.build/debug/tutti}
mkdir -p deploy/config
for role in coordinator follower lyrics ctl mpris; do
  "$tutti" config example "$role" > "deploy/config/$role.toml"
done
"$tutti" config table follower > Sources/TuttiFollower/FollowerCommand+OptionTable.swift
