#!/usr/bin/env bash
# What a device call carries: the checkout (tracked and untracked files git does not ignore) plus the carried
# folders given as arguments. Prints the carry list and the total, and fails if it is over the 64 MiB a call takes.
#     bash experiments/device/carry_size.sh .device/model .device/studydata
set -euo pipefail
cd "$(dirname "$0")/../.."
total=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s}')
for folder in "$@"; do total=$((total + $(du -sb "$folder" | cut -f1))); done
list=$( (($#)) && printf '"%s", ' "$@" || true)
echo "carry: [${list%, }], $((total / 1048576)) MiB with the checkout (limit 64)"
[ "$total" -le $((64 * 1048576)) ] || { echo "too large to carry"; exit 1; }
