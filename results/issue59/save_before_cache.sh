#!/usr/bin/env bash
# The "before" run's cache entries made this session (lines past the committed results/cache at b956d1f), kept so a
# later session resumes the run at b956d1f with no model call for what is done:
#   bash results/issue59/save_before_cache.sh /work/before/.rag/cache    # -> results/issue59/before_cache/*.jsonl.gz
# To resume: git worktree add ../before b956d1f; mkdir -p ../before/.rag/cache; for each NAME, cat
# ../before/results/cache/NAME.jsonl and zcat results/issue59/before_cache/NAME.jsonl.gz into ../before/.rag/cache/NAME.jsonl
set -euo pipefail
src=${1:?the .rag/cache folder of the before worktree}
out=$(dirname "$0")/before_cache
mkdir -p "$out"
for f in answers judge rows links; do
  base=$({ git show b956d1f:results/cache/$f.jsonl 2>/dev/null || true; } | wc -l)
  tail -n +$((base + 1)) "$src/$f.jsonl" | gzip -9 > "$out/$f.jsonl.gz"
  echo "$f: $(zcat "$out/$f.jsonl.gz" | wc -l) new entries"
done
