#!/usr/bin/env bash
# Side by side in one run: `subevict simulate` with its default metrics and no optimum at the
# llama2-7b shape (n = 2048, all 32 heads of layer 0, 2 threads) on the portable and on the
# AVX2 + FMA path of the same binary (SUBEVICT_CPU_PATH, core/cpu_path.hpp), and, when BASELINE
# names another subevict binary (e.g. one built from an earlier commit), that binary too;
# interleaved for ROUNDS rounds. Then one more pair of the two paths with --schedules checks that
# every policy's decisions are byte-identical and compares the metrics. Prints wall, user and
# system seconds and the load before each run (the machine may be shared: compare CPU times).
#
# Usage: [ROUNDS=2] [BASELINE=OLD_SUBEVICT] [OMP_NUM_THREADS=...] \
#          bench/simulate_cpu_paths.sh [PATH_TO_SUBEVICT] [EXTRA simulate ARGS...]
set -euo pipefail
bin=${1:-build/bin/subevict}
shift || true
rounds=${ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(simulate --preset llama2-7b --tokens 2048 --layers 0 --optimum none --threads 2 --quiet "$@")

lscpu | grep -E '^(Model name|CPU\(s\)|Thread)'
echo "command: SUBEVICT_CPU_PATH={portable,avx2} $bin ${args[*]} -o DIR (OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset})"
runs=(portable avx2)
if [ -n "${BASELINE:-}" ]; then
  runs=(baseline "${runs[@]}")
  echo "baseline: $BASELINE ${args[*]} -o DIR"
fi
for round in $(seq 1 "$rounds"); do
  for run in "${runs[@]}"; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    if [ "$run" = baseline ]; then
      /usr/bin/time -f "%e %U %S" -o "$out/time" "$BASELINE" "${args[@]}" -o "$out/$run" >/dev/null
    else
      SUBEVICT_CPU_PATH=$run /usr/bin/time -f "%e %U %S" -o "$out/time" "$bin" "${args[@]}" -o "$out/$run" >/dev/null
    fi
    read -r wall user sys < "$out/time"
    echo "round $round  $run  wall ${wall} s  user ${user} s  sys ${sys} s  load before: $load"
  done
done

# Decisions and metrics of the two paths.
for path in portable avx2; do
  SUBEVICT_CPU_PATH=$path "$bin" "${args[@]}" --no-plots --schedules -o "$out/check_$path" >/dev/null
done
identical=0
for f in "$out"/check_portable/schedule_*.npy; do
  cmp -s "$f" "$out/check_avx2/$(basename "$f")" || { echo "decisions differ: $(basename "$f")"; exit 1; }
  identical=$((identical + 1))
done
echo "decisions: $identical schedule files byte-identical between the paths"
python3 - "$out/check_portable" "$out/check_avx2" <<'PY'
import csv, sys
for f in ("summary.csv", "steps.csv"):
    a, b = (list(csv.DictReader(open(f"{d}/{f}"))) for d in sys.argv[1:3])
    assert len(a) == len(b), f
    worst = {}
    for ra, rb in zip(a, b):
        for key in ra:
            try:
                x, y = float(ra[key]), float(rb[key])
            except ValueError:
                assert ra[key] == rb[key], (f, key, ra[key], rb[key])
                continue
            worst[key] = max(worst.get(key, 0.0), abs(x - y))
    print(f"{f}: largest difference per metric column (as printed):",
          ", ".join(f"{k} {v:.3g}" for k, v in worst.items() if "mass" in k or "error" in k))
PY
