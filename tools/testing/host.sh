# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# host.sh WHO: what the host halves of kqp's make targets share, sourced,
# not run (". tools/testing/host.sh WHO"): the scripts in tools/bench and
# tools/testing that check their environment, build what a guest runs,
# hand it its parameters and boot it with their guest half.  WHO starts
# each message, as the script's own do.
#
#   host_number VAR VALUE    VALUE, taken from VAR, is a whole number
#   host_positive VAR VALUE  ... and above 0
#   host_deps                install what is missing (make deps)
#   host_build THING...      build lib, selftests and rcbench
#   host_args FILE NAME=VALUE...  the guest's parameters, into FILE
#   host_guest KERNEL [DIR]  boot KERNEL with the script's guest half
#
# host_number, host_positive, host_build and host_args exit the script on
# a failure; host_deps and host_guest return their status.
# shellcheck shell=bash

host_who=${1:?usage: . host.sh WHO}
host_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# host_number VAR VALUE: VALUE, which the script took from the environment
# variable VAR (or VAR's default), is a whole number; exits if not.
host_number() {
	case "$2" in
	''|*[!0-9]*)
		echo "$host_who: $1 must be a number, not '$2'" >&2
		exit 1 ;;
	esac
}

# host_positive VAR VALUE: the same, and VALUE is above 0.
host_positive() {
	case "$2" in
	''|*[!0-9]*|0)
		echo "$host_who: $1 must be a positive number, not '$2'" >&2
		exit 1 ;;
	esac
}

# host_deps: install what is missing (tools/deps.sh, make deps), if
# anything is; non-zero when that failed.
host_deps() {
	local what

	what=$("$host_top/tools/deps.sh" --missing) || return 0
	echo "$host_who: $what is missing; installing what is (make deps)"
	"$host_top/tools/deps.sh"
}

# host_build THING...: build what the guest runs, each THING a target of
# the top Makefile (lib, selftests) or rcbench (tools/bench), rcbench
# last: it links against lib.  Exits when a build failed.
host_build() {
	local t bench=0
	local -a targets=()

	for t; do
		case $t in
		rcbench) bench=1 ;;
		*) targets+=("$t") ;;
		esac
	done
	if [ ${#targets[@]} -gt 0 ]; then
		make -s -C "$host_top" "${targets[@]}" || exit 1
	fi
	if [ $bench -eq 1 ]; then
		make -s -C "$host_top/tools/bench" || exit 1
	fi
}

# host_args FILE NAME=VALUE...: the guest's parameters, one NAME=VALUE
# line each, quoted for the guest half to source: the kernel command line
# carries no environment.  Exits when FILE cannot be written.
host_args() {
	local file=$1 a

	shift
	mkdir -p "$(dirname "$file")" || exit 1
	for a; do
		printf '%s=%q\n' "${a%%=*}" "${a#*=}"
	done > "$file" || exit 1
}

# host_guest KERNEL [DIR]: boot the bench kernel KERNEL with the calling
# script's guest half, guest-NAME.sh beside NAME.sh
# (tools/testing/vm/run.sh --script), its results in build/vm/DIR if
# given (KQP_VM_DIR), in run.sh's default otherwise; run.sh's status.
host_guest() {
	local run=$host_top/tools/testing/vm/run.sh script

	script=$(dirname "$0")/guest-$(basename "$0")
	if [ -n "${2:-}" ]; then
		KQP_VM_DIR=$2 "$run" --script "$script" "$1"
	else
		"$run" --script "$script" "$1"
	fi
}
