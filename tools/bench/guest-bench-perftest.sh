#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# make bench-perftest, inside the guest (tools/testing/vm/run.sh --script,
# after guest.sh made the Soft-RoCE device and exported KQP_KMOD, KQP_REPO,
# KQP_OUT and KQP_TEST_ADDR).  Debian's perftest, unchanged, in its RDMA CM
# mode (-R): stock on both sides against LD_PRELOAD=libkqp.so on both
# sides, PERFTEST_ROUNDS times (default 3), the order swapped every round.
# Each run's figures go to $KQP_OUT/perftest-VARIANT-ROUND.txt as "key
# value" lines, which tools/bench/bench-perftest.sh turns into the table;
# a run that failed leaves no line for its key.  -F: TCG's clock makes
# perftest's CPU frequency check fail now and then ("Can't produce a
# report"), for stock and kqp alike.
set -u

repo=$KQP_REPO
addr=${KQP_TEST_ADDR:-192.0.2.1}
export KQP_LIB=$repo/lib/libkqp.so
export KQP_LIMIT=300
KQP_WORK=$(mktemp -d)
export KQP_WORK
port=18700
rounds=3
# shellcheck disable=SC1091
[ -r "$repo/build/bench/perftest-args" ] && . "$repo/build/bench/perftest-args"
rounds=${PERFTEST_ROUNDS:-$rounds}
# shellcheck source=tools/testing/selftests/kqp/lib.sh
. "$repo/tools/testing/selftests/kqp/lib.sh"

kqp_load "$KQP_KMOD" perftest || exit 1
for p in ib_send_lat ib_send_bw ib_write_bw; do
	if ! command -v "$p" > /dev/null; then
		echo "perftest: $p is missing (make deps installs perftest)"
		exit 1
	fi
done

# The data line of a perftest table: the first line starting with the
# message size.
data_line() {
	awk -v s="$1" '$1 == s { print; exit }' "$2"
}

# measure VARIANT KEY PROGRAM SIZE ARGS...: one run, both sides VARIANT
# (stock: rdma-core; kqp: preloaded); appends its figures to $out.
measure() {
	local who=$1 key=$2 prog=$3 size=$4 line name
	shift 4
	port=$((port + 1))
	name=$key-$who-$port
	run_pair "$name" "$who" "$who" "$port" \
		"$prog" -R -F -p "$port" -s "$size" "$@" -- \
		"$prog" -R -F -p "$port" -s "$size" "$@" "$addr"
	if ! pair_ok "$name" > /dev/null; then
		echo "perftest: $who $prog -s $size failed:"
		tail -n 5 "$KQP_WORK/$name.c.err" "$KQP_WORK/$name.s.err"
		return 1
	fi
	line=$(data_line "$size" "$KQP_WORK/$name.c.out")
	[ -n "$line" ] || return 1
	case $prog in
	ib_send_lat)
		# bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9
		set -- $line
		echo "${key}_median_us $5" >> "$out"
		echo "${key}_p99_us $8" >> "$out"
		;;
	*)
		# bytes iters BW_peak BW_average MsgRate(Mpps)
		set -- $line
		echo "${key}_mbs $4" >> "$out"
		echo "${key}_kmsgs $(awk -v r="$5" 'BEGIN { printf "%.1f", r * 1000 }')" >> "$out"
		;;
	esac
}

run_variant() {
	local who=$1 round=$2 variant=rdmacm rc=0

	[ "$who" = kqp ] && variant=kqp
	out=$KQP_OUT/perftest-$variant-$round.txt
	: > "$out"
	echo "perftest: $variant, round $round"
	measure "$who" pt_send_lat_8 ib_send_lat 8 -n 2000 || rc=1
	measure "$who" pt_send_lat_4096 ib_send_lat 4096 -n 1000 || rc=1
	measure "$who" pt_send_bw_64 ib_send_bw 64 -n 20000 || rc=1
	measure "$who" pt_send_bw_65536 ib_send_bw 65536 -n 1000 || rc=1
	measure "$who" pt_write_bw_65536 ib_write_bw 65536 -n 1000 || rc=1
	cat "$out"
	return $rc
}

fail=0
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		run_variant stock "$r" || fail=1
		run_variant kqp "$r" || fail=1
	else
		run_variant kqp "$r" || fail=1
		run_variant stock "$r" || fail=1
	fi
done
rm -rf "$KQP_WORK"
# As the other bench halves end: a module that will not unload fails the
# run, and run.sh's judge() reads the unload's messages with the rest.
kqp_unload perftest || fail=1
exit $fail
