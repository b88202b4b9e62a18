#!/bin/bash
# The GPU machine's checks in one call (see docs/testing.md), each step's log under $OUT:
#   STEPS="suite examples embed threads capture sanitize fuzz bench" bash tools/gpu-checks.sh
# Needs the Lua prefix from ../shared/device/make-prefix (.devprefix).  STEP_TIMEOUT (s),
# THREAD_SECONDS, FUZZ_SECONDS and TAILN (log lines shown per step) tune it.  The suite takes
# longer than one device call allows, so SUITE_FILES (globs; default every spec) picks the
# part a call runs; each file's time and summary go to suite-times.txt, the total last.
# SANITIZE_SPECS limits the compute-sanitizer step to some spec files.  The lanes step runs
# the whole suite in one call instead, several files at once (see suite_lanes).
source .devprefix/env.sh
OUT=${OUT:-build/gpu-checks}
mkdir -p "$OUT"
export GPU_CACHE_DIR=${GPU_CACHE_DIR:-/tmp/lua-gpu-cache}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
make -s clean >/dev/null 2>&1
make -s LUA_INCDIR="$LUA_INCDIR" LUA="$LUA" 2>&1 | tail -5
vars=(LUA_INCDIR="$LUA_INCDIR" LUA="$LUA" BUSTED="$BUSTED")

SUMMARY='^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'

# Adds summary line $1 to the totals passed, failed and skipped; a missing one (a file that
# did not run to its end) counts as a failure.
add_summary() {
  local p f k
  read -r p _ f _ k _ <<<"$1"
  if [[ "$p" =~ ^[0-9]+$ ]]; then
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
  else
    failed=$((failed + 1))
  fi
}

# make test-gpu file by file: each file's seconds and summary, then the total summary line.
# A word of SUITE_FILES that starts with -- is a busted option for the files after it (so a
# lane can take a file's tests with or without a tag).  LOGS, when set, names the folder of
# the logs (suite-output.log, suite-times.txt), $OUT unless set.
suite_files() {
  local file line t0 passed=0 failed=0 skipped=0 options="" logs=${LOGS:-$OUT}
  for file in ${SUITE_FILES:-spec/*_spec.lua}; do
    if [[ $file == --* ]]; then options+="$file "; continue; fi
    t0=$(date +%s)
    line=$(timeout "${STEP_TIMEOUT:-300}" make -s test-gpu "${vars[@]}" SPECS="$options$file" 2>&1 |
           tee -a "$logs/suite-output.log" | grep -E "$SUMMARY")
    echo "$(( $(date +%s) - t0 ))s $options$file: $line" | tee -a "$logs/suite-times.txt"
    add_summary "$line"
  done
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}

# The whole suite in one call: the slowest files in a lane each (spec/30's and spec/38's tests
# without a GPU, cold NVRTC compiles of many kernels, in other lanes than those with one) and the
# rest in three more, all at once (most of the suite's time is its CPU references, in Lua),
# then, alone, spec/40, spec/51 and spec/60, which measure the whole device's free memory
# (spec/60 fills it; spec/51 without the pool) and fail beside other processes.  The lanes'
# logs are joined into suite-output.log and suite-times.txt, every failure's report goes to
# failures.log, each test's time to spec-times.txt (SLOWEST of them shown, 12 unless set):
# few files, as the device tool brings back at most 8.  About 3 minutes on the H200 (spec/38's
# GPU tests, 175 s, the longest lane; files get 480 s here unless STEP_TIMEOUT says), where
# the file-by-file suite takes 12.
suite_lanes() {
  local lanes=("spec/22*_spec.lua" "--tags=gpu spec/30*_spec.lua" "spec/31*_spec.lua"
               "--tags=gpu spec/38*_spec.lua"
               "spec/0*_spec.lua spec/1*_spec.lua spec/2[013-9]*_spec.lua"
               "spec/3[2-79]*_spec.lua --exclude-tags=gpu spec/30*_spec.lua"
               "spec/4[1-9]*_spec.lua spec/50*_spec.lua spec/6[1-9]*_spec.lua
                --exclude-tags=gpu spec/38*_spec.lua"
               "spec/5[2-9]*_spec.lua"
               "spec/40*_spec.lua spec/51*_spec.lua spec/60*_spec.lua")
  local i last=$((${#lanes[@]} - 1)) passed=0 failed=0 skipped=0 work
  work=$(mktemp -d)
  export SPEC_TIMES="$OUT/spec-times.txt"                    # spec/summary.lua appends to it
  rm -f "$SPEC_TIMES" "$OUT/suite-output.log" "$OUT/suite-times.txt"
  for ((i = 0; i <= last; i++)); do mkdir "$work/$i"; done
  for ((i = 0; i < last; i++)); do
    (LOGS=$work/$i STEP_TIMEOUT=${STEP_TIMEOUT:-480} SUITE_FILES="${lanes[$i]}" suite_files \
       > "$work/$i/lane.txt") &
  done
  wait
  LOGS=$work/$last SUITE_FILES="${lanes[$last]}" suite_files > "$work/$last/lane.txt"
  for ((i = 0; i <= last; i++)); do
    cat "$work/$i/suite-output.log" >> "$OUT/suite-output.log"
    echo "lane $i: $(tail -1 "$work/$i/lane.txt")" | tee -a "$OUT/suite-times.txt"
    tee -a "$OUT/suite-times.txt" < "$work/$i/suite-times.txt"
    add_summary "$(tail -1 "$work/$i/lane.txt")"
  done
  rm -rf "$work"
  grep -h -A30 -E "^(Failure|Error) ->" "$OUT/suite-output.log" > "$OUT/failures.log"
  echo "slowest tests (seconds, status, where):"
  sort -rn "$SPEC_TIMES" | head -"${SLOWEST:-12}" | cut -f1-3
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}

step() {
  local name=$1 t0 rc
  shift
  echo "== $name"
  t0=$(date +%s)
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "rc=$rc $(( $(date +%s) - t0 ))s"
  tail -"${TAILN:-5}" "$OUT/$name.log"
}

for s in ${STEPS:-suite examples embed threads capture}; do
  case $s in
    suite) echo "== suite"; suite_files ;;
    lanes) echo "== suite in lanes"; suite_lanes ;;
    examples) step examples make -s examples "${vars[@]}" ;;
    embed) step embed make -s embed-run "${vars[@]}" ;;
    threads) step threads make -s threads THREADS=8 SECONDS="${THREAD_SECONDS:-60}" "${vars[@]}" ;;
    capture) step capture make -s threads-capture SECONDS="${THREAD_SECONDS:-60}" "${vars[@]}" ;;
    sanitize) step sanitize make -s sanitize "${vars[@]}" SPECS="${SANITIZE_SPECS:-}" ;;
    fuzz) step fuzz make -s fuzz FUZZ_GPU=1 FUZZ_SECONDS="${FUZZ_SECONDS:-60}" "${vars[@]}" ;;
    bench) step bench make -s bench "${vars[@]}" ;;
    *) echo "unknown step '$s'" >&2; exit 2 ;;
  esac
done
