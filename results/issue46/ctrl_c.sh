set -m
cd /work/main
for at in 3 5; do
  q="Which river runs through the capital of the country where the $at-th oldest university stands?"
  start=$(date +%s.%N)
  .venv/bin/python generate.py "$q" > /tmp/ctrlc.out 2>&1 &
  pid=$!
  # wait until the model call begins (the line naming the model), then $at s more
  while ! grep -q "model" /tmp/ctrlc.out 2>/dev/null; do sleep 0.1; done
  sleep $at
  sent=$(date +%s.%N)
  kill -INT $pid
  wait $pid; rc=$?
  done_t=$(date +%s.%N)
  echo "SIGINT $at s after the call began: exit $rc, $(echo "$done_t - $sent" | bc) s after the signal; last line: $(tail -1 /tmp/ctrlc.out)"
done
