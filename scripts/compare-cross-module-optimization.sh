#!/usr/bin/env bash
# Measures what `LISTSTORE_CROSS_MODULE_OPTIMIZATION=1` buys: builds the benchmark twice
# (without and with -cross-module-optimization, each in a scratch folder of its own), runs
# B1, B2 at 1M items and B6 with each build in turn, ROUNDS times (default 3) — and B6, a
# few seconds but noisy (one run in ten is 1.3 × its median), 16 times more alone — and
# prints, for every measurement, the median over rounds of ListStore's median without the
# flag against with it: a slowdown, so that 1.05 × means 5 % slower without it, whatever
# the unit.
#
#   scripts/compare-cross-module-optimization.sh [ROUNDS] [-- BENCH OPTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
[ "${1:-}" = "--" ] && shift
extra=("$@")
out=$(mktemp -d)

for variant in off on; do
  flag=0
  [ "$variant" = on ] && flag=1
  echo "== building the benchmark, cross-module optimization $variant" >&2
  LISTSTORE_CROSS_MODULE_OPTIMIZATION=$flag swift build -c release --package-path Benchmarks \
    --scratch-path "Benchmarks/.build-cmo-$variant" --product liststore-bench >&2
done

for round in $(seq 1 "$rounds"); do
  # Alternate which build goes first, so that neither always runs on a warmer machine.
  order=(off on)
  [ $((round % 2)) -eq 0 ] && order=(on off)
  for variant in "${order[@]}"; do
    echo "== round $round of $rounds, cross-module optimization $variant" >&2
    "Benchmarks/.build-cmo-$variant/release/liststore-bench" --only B1,B2,B6 \
      --b2-sizes 1000000 "${extra[@]}" --json "$out/$variant-$round.json" >/dev/null
  done
done

for round in $(seq 1 16); do
  for variant in off on; do
    "Benchmarks/.build-cmo-$variant/release/liststore-bench" --only B6 \
      --json "$out/$variant-b6-$round.json" >/dev/null 2>&1
  done
done

python3 - "$out" "$rounds" <<'EOF'
import glob, json, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
medians = {}
for variant in ("off", "on"):
    for path in sorted(glob.glob(f"{folder}/{variant}-*.json")):
        for row in json.load(open(path))["rows"]:
            key = (row["id"], row["name"], row["unit"])
            medians.setdefault(key, {"off": [], "on": []})[variant].append(row["value"]["median"])
print("| # | measurement | without ÷ with (slowdown) | without (median of rounds) | with |")
print("| --- | --- | --- | --- | --- |")
worst = 0.0
for (id, name, unit), values in medians.items():
    off, on = statistics.median(values["off"]), statistics.median(values["on"])
    throughput = "/s" in unit
    slowdown = on / off if throughput else off / on
    worst = max(worst, slowdown)
    print(f"| {id} | {name} | {slowdown:.3f} × | {off:.4g} {unit} | {on:.4g} {unit} |")
print(f"\nworst: {worst:.3f} × ({rounds} rounds of each build, alternating; B6 {rounds + 16})")
EOF
