// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The one place kqp's tracepoints (trace.h) are defined. */
#define CREATE_TRACE_POINTS
#include "trace.h"
