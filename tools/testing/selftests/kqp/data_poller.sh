#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The data tests (data.c, through libkqp) with the table's poller on:
# KQP_POLLER=1 makes libkqp ask for one, so every send and receive of
# those tests is posted through rings the poller serves, and receives
# wait for it rather than ring.  On a kernel without a poller (6.1)
# libkqp carries on without one, and this is the data tests again.
here=$(cd "$(dirname "$0")" && pwd)
KQP_POLLER=1 KQP_POLLER_IDLE_US=${KQP_POLLER_IDLE_US:-2000} \
	exec "$here/data" "$@"
