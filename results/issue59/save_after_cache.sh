#!/usr/bin/env bash
# The after-run's cache entries (.rag/cache of this checkout: answers, judge replies, rows, links, injection), kept in
# the repository so a later session resumes the run with no model call for what is done, even on a fresh clone:
#   bash results/issue59/save_after_cache.sh           # -> results/issue59/after_cache/*.jsonl.gz
# To resume on a fresh clone: mkdir -p .rag/cache; for each NAME: zcat results/issue59/after_cache/NAME.jsonl.gz
# >> .rag/cache/NAME.jsonl (a line cut short by a write in progress is dropped on load, nothing else).
# The saved files left the tree when issue 60's tables were made (results/cache holds what they read); the last
# ones are in git history: git checkout 8e7f05f -- results/issue59/after_cache
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/issue59/after_cache
mkdir -p "$out"
for f in .rag/cache/*.jsonl; do
  [ -s "$f" ] || continue
  name=$(basename "$f" .jsonl)
  gzip -9 < "$f" > "$out/$name.jsonl.gz"
  echo "$name: $(wc -l < "$f") entries"
done
