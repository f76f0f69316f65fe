#!/usr/bin/env bash
# What tracing costs while it is off, counted in instructions rather than
# timed: this build's gateway against the same tree with the tracing
# instrumentation taken out (testdata/without-tracing.patch), both running
# server's BenchmarkHotPathCycle/serial (the default gateway in process,
# one caller at a time, against a redis-server of its own) under
# valgrind's cachegrind, which counts the instructions the process
# executes. A count does not move with the machine's load the way CPU
# time does (docs/benchmarks.md, "Tracing cost").
#
# Per cycle = (Ir at 1500 cycles - Ir at 300 cycles) / 1200, so the start
# (Redis, gateway, test binary) cancels out. ROUNDS pairs, alternating.
#
#   bash tools/bench/tracingcost.sh            # ROUNDS=5
#
# Needs valgrind and redis-server. Takes about 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${ROUNDS:-5}"
work="$(mktemp -d)"
trap 'git worktree remove --force "$work/without" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add -q --detach "$work/without" HEAD
git -C "$work/without" apply "$PWD/tools/bench/testdata/without-tracing.patch"
go test -c -o "$work/with.test" ./server/
(cd "$work/without" && go test -c -o "$work/without.test" ./server/)

# ir BIN N: the instructions BIN executes running N cycles.
ir() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$1" -test.run '^$' -test.bench 'HotPathCycle/^serial$' -test.benchtime "${2}x" -test.cpu 1 2>&1 |
    awk '/I *refs:/ { gsub(",", "", $NF); print $NF }'
}

echo "round  without-tracing  this-build  ratio   (instructions per lock cycle)"
for r in $(seq "$rounds"); do
  a=$(( ($(ir "$work/without.test" 1500) - $(ir "$work/without.test" 300)) / 1200 ))
  b=$(( ($(ir "$work/with.test" 1500) - $(ir "$work/with.test" 300)) / 1200 ))
  awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN { printf "%5d  %15d  %10d  %.4f\n", r, a, b, b / a }'
done | tee "$work/rounds"
sort -k4 -n "$work/rounds" | awk '{ r[NR] = $4 } END { printf "median ratio %.4f over %d rounds\n", r[int((NR + 1) / 2)], NR }'
