#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer target for a fixed time over a copy of its seed corpus,
# so the repository's corpus is never modified. Exit status: the fuzzer's
# (non-zero on a crash, leak, timeout or failed invariant).
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS ARTIFACT_DIR
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3 artifacts=$4

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$corpus" "$work/corpus"
mkdir -p "$artifacts"

# -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a parser
# allocating gigabytes for a short input is a bug too.
set +e
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$work/corpus" 2>&1 | tee "$work/log"
status=${PIPESTATUS[0]}
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: //p' "$work/log")
echo "run_fuzzer: $(basename "$fuzzer"): ${runs:-?} executions in ${seconds} s," \
  "corpus $(ls "$corpus" | wc -l) -> $(ls "$work/corpus" | wc -l) inputs"
if [[ $status -ne 0 ]]; then
  echo "run_fuzzer: $(basename "$fuzzer") failed (exit $status); the input is in $artifacts/" >&2
  echo "run_fuzzer: reproduce with: $fuzzer $artifacts/<crash-file>" >&2
fi
exit "$status"
