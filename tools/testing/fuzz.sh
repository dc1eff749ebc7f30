#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make fuzz: kqp's ioctl fuzzer (tools/testing/selftests/kqp/fuzz.c) in a
# guest, for as long as asked, then the bench's verdicts: the fuzzer's
# own oracles, no kernel splat, no kmemleak report naming kqp, and
# kqp.ko unloads.  Prints the seed, the calls made and calls/s.
#
# Environment:
#   FUZZ_KERNEL   the kernel (default debug: KASAN, lockdep, KCOV ...)
#   FUZZ_SECONDS  how long (default 600); FUZZ_CALLS=N stops after N calls
#   FUZZ_SEED     the seed (default: a new one, printed)
#   FUZZ_THREADS  threads on the shared files (default 4)
#   FUZZ_SKIP     commands never to make, e.g. ESTABLISH,NOTIFY (see --skip)
#   FUZZ_TRACE=1  every call into build/vm/KERNEL/out/fuzz-trace (for --threads 1)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
name=${FUZZ_KERNEL:-debug}
seconds=${FUZZ_SECONDS:-600}
calls=${FUZZ_CALLS:-0}
seed=${FUZZ_SEED:-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
threads=${FUZZ_THREADS:-4}

# host_build and the rest of what the host halves share.
# shellcheck source=tools/testing/host.sh
. "$repo/tools/testing/host.sh" fuzz
host_number FUZZ_SECONDS "$seconds"
host_number FUZZ_CALLS "$calls"
host_number FUZZ_THREADS "$threads"
case "$seed" in
0x*) ;;
*[!0-9]*) seed=0x$seed ;;
esac

host_build lib selftests
args="--tap --seed $seed --threads $threads"
[ -n "${FUZZ_SKIP:-}" ] && args+=" --skip $FUZZ_SKIP"
[ -n "${FUZZ_TRACE:-}" ] && args+=" --trace @OUT@/fuzz-trace"
if [ "$calls" -gt 0 ]; then
	args+=" --calls $calls"
	[ -n "${FUZZ_SECONDS:-}" ] && args+=" --seconds $seconds"
else
	args+=" --calls 0 --seconds $seconds"
fi
host_args "$repo/build/fuzz/args" FUZZ_ARGS="$args"
echo "fuzz: $name, fuzz $args"

start=$(date +%s)
KQP_GUEST_TIMEOUT=${KQP_GUEST_TIMEOUT:-$((seconds + 1800))} host_guest "$name"
rc=$?
echo "fuzz: seed $seed, $(( $(date +%s) - start )) s on the host"
exit $rc
