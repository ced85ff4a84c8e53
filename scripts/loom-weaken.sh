#!/usr/bin/env bash
# Proves that the loom models can fail: applies, one at a time, each
# weakening of an ordering the ring's protocols depend on (an Acquire or
# Release made Relaxed, an Acquire or SeqCst fence removed) and each removal of a check
# the models are there to cover, to a copy of the tree, and expects the
# models named with it to fail. A mutant the models pass is a hole in the
# models (or an ordering the protocol does not need): the script fails and
# names it.
#
#   bash scripts/loom-weaken.sh            # every mutant (about 3 minutes)
#   bash scripts/loom-weaken.sh desc-release fence-signal   # some of them
#
# The copy lives in target/loom-weaken/tree and builds in its own target
# directory, target/loom-weaken/target: cargo names a workspace's crates by
# their path inside the workspace, so a mutant built in the suite's
# target/loom would pass there for the tree's own build. Only vecring-core
# and the models are rebuilt for each mutant.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
copy=$root/target/loom-weaken/tree
export RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$root/target/loom-weaken/target
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
export CARGO_TERM_COLOR=never

# name | file | exact text | replacement | test binary | models expected to fail
# (the text must occur exactly once in the file: a change in the code that
# moves it fails the script instead of testing nothing).
MUTANTS=(
  "desc-release|vecring-core/src/ring/shape.rs|    desc.0.store(word, Ordering::Release);|    desc.0.store(word, Ordering::Relaxed);|loom|single_slot_frames_through_two_slots send_batch_to_recv_batch recv_fast_path_for_frames_like_the_last recv_fast_path_for_multi_slot_frames push_to_read_chunk_frames"
  "desc-acquire-recv|vecring-core/src/ring/consumer.rs|            let word = shape.desc(tail).0.load(Ordering::Acquire);|            let word = shape.desc(tail).0.load(Ordering::Relaxed);|loom|recv_fast_path_for_frames_like_the_last recv_fast_path_for_multi_slot_frames"
  "desc-acquire-batch|vecring-core/src/ring/copy.rs|            let word = unsafe { &*desc }.0.load(Ordering::Acquire);|            let word = unsafe { &*desc }.0.load(Ordering::Relaxed);|loom|send_batch_to_recv_batch"
  "group-fence|vecring-core/src/ring/copy.rs|            fence(Ordering::Acquire);
            // Each buffer is asked|            // Each buffer is asked|loom|equal_small_frames_in_groups"
  "run-fence|vecring-core/src/ring/read_chunk.rs|            fence(Ordering::Acquire);
            (like, like_count|            (like, like_count|loom|push_run_to_runs_as_arrays"
  "first-early|vecring-core/src/ring/producer.rs|                        first = Some((desc, plan.word));|                        put_desc(&*desc, plan.word);|loom|a_sent_batch_is_seen_whole"
  "descs-forward|vecring-core/src/ring/shape.rs|    while j > 0 {
        j -= 1;
        // SAFETY: \`j < count\`: one of the caller's descriptors.|    for j in 0..j {
        // SAFETY: \`j < count\`: one of the caller's descriptors.|loom|a_committed_chunk_is_seen_whole"
  "tail-release|vecring-core/src/ring/consumer.rs|.store(index, Ordering::Release)|.store(index, Ordering::Relaxed)|loom|single_slot_frames_through_two_slots send_batch_to_recv_batch"
  "tail-acquire|vecring-core/src/ring/producer.rs|let tail = self.storage.control().tail.index.load(Ordering::Acquire);
        let advanced|let tail = self.storage.control().tail.index.load(Ordering::Relaxed);
        let advanced|loom|single_slot_frames_through_two_slots send_batch_to_recv_batch"
  "hold-back-off|vecring-core/src/ring/hold_back.rs|        self.hold_below > 0 && self.holding_slow()|        self.hold_below > 0 && false && self.holding_slow()|loom|hold_back_holds_batches_and_never_recv"
  "recv-held-back|vecring-core/src/ring/consumer.rs|        if self.poisoned.is_none() {
            let shape = self.shape;
            let tail = self.tail;|        if self.holding() {
            return Err(RecvError::Empty);
        }
        if self.poisoned.is_none() {
            let shape = self.shape;
            let tail = self.tail;|loom|hold_back_holds_batches_and_never_recv"
  "fence-signal|vecring-core/src/ring/wait.rs|        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence above.|        // Relaxed: ordered by the fence above.|loom_wake|sleeping_consumer_gets_every_frame sleeping_producer_gets_room"
  "fence-prepare|vecring-core/src/ring/wait.rs|        fence(Ordering::SeqCst);
        // Relaxed: after the fence above.|        // Relaxed: after the fence above.|loom_wake|sleeping_consumer_gets_every_frame sleeping_producer_gets_room"
  "always-nap|vecring-core/src/ring/wait.rs|        peer.ack.load(Ordering::Relaxed) != 0
    }|        peer.ack.load(Ordering::Relaxed) != 0 && false
    }|loom_wake|an_acknowledged_consumer_sleeps an_acknowledged_producer_sleeps"
)

want=" $* "
echo "loom-weaken: copying the tree to $copy"
rm -rf "$copy"
mkdir -p "$copy" "$CARGO_TARGET_DIR"
git ls-files -z | tar --null -T - -cf - | tar -C "$copy" -xf -

# Replaces the one occurrence of $2 in file $1 with $3.
mutate() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
n = text.count(old)
if n != 1:
    sys.exit(f"loom-weaken: the text to change occurs {n} times in {path}, not once:\n{old}")
open(path, "w").write(text.replace(old, new))
PY
}

survivors=()
ran=0
for m in "${MUTANTS[@]}"; do
  IFS='|' read -r -d '' name file old new bin models <<<"$m" || true
  models=${models%$'\n'}
  if [ "$want" != "  " ] && [[ "$want" != *" $name "* ]]; then
    continue
  fi
  ran=$((ran + 1))
  cp "$root/$file" "$copy/$file"
  mutate "$copy/$file" "$old" "$new"
  start=$SECONDS
  if ! (cd "$copy" && cargo test --release -q -p vecring-core --test "$bin" --no-run 2>"$copy/build.log"); then
    cat "$copy/build.log" >&2
    echo "loom-weaken: mutant $name does not build" >&2
    exit 1
  fi
  # Each model is expected to fail on its own: run them one by one.
  for model in $models; do
    if (cd "$copy" && timeout --kill-after=10s 600s \
        cargo test --release -q -p vecring-core --test "$bin" -- --exact "$model" >"$copy/run.log" 2>&1); then
      echo "loom-weaken: $name: $bin::$model PASSED with the mutant ($((SECONDS - start)) s)"
      survivors+=("$name:$model")
    else
      why=$(grep -m1 -E "panicked at|deadlock|Causality|exceeded|assert" "$copy/run.log" -A1 | tr '\n' ' ' | cut -c1-200)
      echo "loom-weaken: $name: $bin::$model fails ($((SECONDS - start)) s): $why"
    fi
  done
  cp "$root/$file" "$copy/$file"
done

if [ "$ran" -eq 0 ]; then
  echo "loom-weaken: no mutant named$want" >&2
  exit 1
fi
if [ "${#survivors[@]}" -gt 0 ]; then
  echo "loom-weaken: ${#survivors[@]} model(s) passed with a mutant: ${survivors[*]}" >&2
  exit 1
fi
echo "loom-weaken: every one of $ran mutants fails the models named with it"
