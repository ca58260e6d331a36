#!/bin/bash
# Honest hand-ins of weeks 2 and 4, each student on its own draw, each on its own build, from a clean checkout
# (the code at the commit printed) with its own .rag (its own index built, empty caches): what a student makes at
# home. Then the course's reference on the grading machine (native) for the three draws.
#   bash results/issue47/honest_handins.sh OUT   (run from a checkout; ~1 h 40 min on 2 cores)
set -u
OUT=${1:-/tmp/h47}
PY=$(pwd)/.venv/bin/python
mkdir -p "$OUT"
echo "commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ); nproc $(nproc)"
run() {   # student build threads
  local who=$1 build=$2 threads=$3 dir="$OUT/$1"
  mkdir -p "$dir/rag/cache" "$dir/results"
  echo "== $who: RAG_ENGINE_BUILD=$build RAG_THREADS=${threads:-all} RAG_STUDENT=$who"
  export RAG_INDEX_DIR="$dir/rag" RAG_ENGINE_BUILD=$build RAG_STUDENT=$who
  if [ -n "$threads" ]; then export RAG_THREADS=$threads; else unset RAG_THREADS; fi
  local t=$(date +%s)
  $PY retrieve.py --eval --json "$dir/results/retrieval.json" > "$dir/retrieve.log" 2>&1
  $PY verify_citations.py --limit 30 --json "$dir/results/citations_json_30.json" > "$dir/verify.log" 2>&1
  echo "   exit $?, $(( $(date +%s) - t )) s; $(grep -m1 'citation' "$dir/verify.log")"
  $PY -m grading.handin "$dir/results/retrieval.json" "$dir/results/citations_json_30.json" --student $who \
      --out "$OUT/subs/handin-$who.tar.gz" 2>&1 | tail -3
  unset RAG_INDEX_DIR RAG_ENGINE_BUILD RAG_STUDENT RAG_THREADS
}
mkdir -p "$OUT/subs"
run ivan wheel ""   # (its run was at commit 78ea4b6; the others at 12c15c7: honest_handins_run.txt)
run jon native 1
echo "== reference (the grader, native): ivan, jon, hana; weeks 2 and 4"
mkdir -p "$OUT/ref-rag/cache"; t=$(date +%s)
RAG_INDEX_DIR="$OUT/ref-rag" RAG_ENGINE_BUILD=native $PY -m grading.reference --build "$OUT/ref" --students ivan,jon,hana --weeks 2,4 > "$OUT/ref.log" 2>&1
echo "   exit $?, $(( $(date +%s) - t )) s"
# hana, native: the grader's machine and build; her hand-in is the reference run's own files for her draw
mkdir -p "$OUT/hana/results" && cp "$OUT/ref/hana.citations_json_30.json" "$OUT/hana/results/citations_json_30.json"
cp "$OUT/ref/retrieval.json" "$OUT/hana/results/retrieval.json"
RAG_STUDENT=hana $PY -m grading.handin "$OUT/hana/results/retrieval.json" "$OUT/hana/results/citations_json_30.json" \
    --student hana --out "$OUT/subs/handin-hana.tar.gz" 2>&1 | tail -3
