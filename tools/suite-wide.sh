#!/bin/bash
# The whole GPU suite in one device call, wider than gpu-checks.sh's lanes: a busted process
# a spec file, 16 at a time (spec/30, 31 and 38, the slowest, split in three by test name),
# then spec/40, 51 and 60 alone (they measure the device's free memory); each part's log and
# summary under $OUT/parts, the total summary line last.  On the H200 (2026-11-30) its split
# took 204 s where the lanes take about 400; that run lacked the two fixes below (LUA_PATH for
# child processes, which spec/60's exit worker needs, and the binaries built first), checked
# since on a machine without a GPU only.  Needs .devprefix (../shared/device/make-prefix):
#   OUT=$OUT bash tools/suite-wide.sh
source .devprefix/env.sh
OUT=${OUT:-build/suite-wide}
# as the Makefile's test targets export them: specs start child Lua processes
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/spec/?.lua;$LUA_PATH;;"
export LUA_CPATH="$PWD/?.so;$LUA_CPATH;;"
make -s clean >/dev/null 2>&1
# the binaries specs build for themselves, once: spec/50 and 62 running at once would each
# rewrite build/embed-test while the other runs it ("Text file busy")
make -s LUA_INCDIR=$LUA_INCDIR LUA=$LUA >/dev/null 2>&1 &&
  make -s fakecuda build/embed-test build/threads LUA_INCDIR=$LUA_INCDIR LUA=$LUA >/dev/null 2>&1 ||
  { echo build failed; exit 1; }
export GPU_CACHE_DIR=/tmp/lua-gpu-cache
mkdir -p $OUT/parts
S31=spec/31-scan_spec.lua S30=spec/30-reduction_spec.lua S38=spec/38-matmul_spec.lua
A31="--filter=along%san%saxis --filter=cumsum%sof%severy%sdtype"
O31="--filter-out=along%san%saxis --filter-out=cumsum%sof%severy%sdtype"
B31="--filter=custom%sscans --filter=compile%sfor%severy"
OB31="--filter-out=custom%sscans --filter-out=compile%sfor%severy"
A30="--filter=kernels%scompile" ; O30="--filter-out=kernels%scompile"
B30="--filter=mean%sof%severy%sdtype --filter=sum%slarge"; OB30="--filter-out=mean%sof%severy%sdtype --filter-out=sum%slarge"
A38="--filter=compiles%sfor%severy%sresult --filter=staged%sin%sshared"
O38="--filter-out=compiles%sfor%severy%sresult --filter-out=staged%sin%sshared"
B38="--filter=tensor%scores --filter=read%sacross --filter=every%skind --filter=splits%slong%srows"
OB38="--filter-out=tensor%scores --filter-out=read%sacross --filter-out=every%skind --filter-out=splits%slong%srows"
{
  echo "$A31 $S31"; echo "$O31 $B31 $S31"; echo "$O31 $OB31 $S31"
  echo "$A30 $S30"; echo "$O30 $B30 $S30"; echo "$O30 $OB30 $S30"
  echo "$A38 $S38"; echo "$O38 $B38 $S38"; echo "$O38 $OB38 $S38"
  for f in spec/*_spec.lua; do
    case $f in $S31|$S30|$S38|spec/40-*|spec/51-*|spec/60-*) ;; *) echo "$f";; esac
  done
} > $OUT/jobs.txt
run_part() {
  local n=$1; shift
  local t0=$(date +%s)
  timeout 390 $BUSTED --run=gpu $* > $OUT/parts/$n.log 2>&1
  echo "$(( $(date +%s) - t0 ))s [$*]: $(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' $OUT/parts/$n.log || echo MISSING)" > $OUT/parts/$n.txt
}
export -f run_part; export OUT BUSTED
nl -ba $OUT/jobs.txt | xargs -P 16 -L 1 bash -c 'run_part "$@"' _
n=100
for f in spec/40-*_spec.lua spec/51-*_spec.lua spec/60-*_spec.lua; do n=$((n + 1)); run_part $n $f; done
cat $OUT/parts/*.txt | sort -n > $OUT/parts-times.txt
awk -F': ' '{split($NF, a, " "); if ($NF ~ /MISSING/) f++; else {p += a[1]; f += a[3]; s += a[5]}} END {print p " passed, " f " failed, " s " skipped"}' $OUT/parts-times.txt
grep -h -A25 -E "^(Failure|Error) ->" $OUT/parts/*.log > $OUT/failures.log; head -40 $OUT/failures.log
tail -5 $OUT/parts-times.txt
