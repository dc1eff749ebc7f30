// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libibverbs' pure functions over its enums: names for printing, and the
 * conversions between enum ibv_rate and link speeds.  They touch no
 * object, but a binary run with LD_PRELOAD=libkqp.so resolves every
 * libibverbs name here, so they must exist.
 */
#include "kqp_priv.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * One line per rate the enum knows.  @mbps is the rate's exact signalling
 * figure, which is what libibverbs reports and callers compare against;
 * @mult is the nominal rate over 2.5 Gb/s, or 0 for the rates libibverbs
 * gives no multiple.
 */
static const struct {
	enum ibv_rate rate;
	int mbps;
	int mult;
} kqp_rates[] = {
	{ IBV_RATE_2_5_GBPS,	   2500,   1 },
	{ IBV_RATE_5_GBPS,	   5000,   2 },
	{ IBV_RATE_10_GBPS,	  10000,   4 },
	{ IBV_RATE_20_GBPS,	  20000,   8 },
	{ IBV_RATE_30_GBPS,	  30000,  12 },
	{ IBV_RATE_40_GBPS,	  40000,  16 },
	{ IBV_RATE_60_GBPS,	  60000,  24 },
	{ IBV_RATE_80_GBPS,	  80000,  32 },
	{ IBV_RATE_120_GBPS,	 120000,  48 },
	/* FDR and EDR: 64b/66b lanes, no multiple. */
	{ IBV_RATE_14_GBPS,	  14062,   0 },
	{ IBV_RATE_56_GBPS,	  56250,   0 },
	{ IBV_RATE_112_GBPS,	 112500,   0 },
	{ IBV_RATE_168_GBPS,	 168750,   0 },
	{ IBV_RATE_25_GBPS,	  25781,   0 },
	{ IBV_RATE_100_GBPS,	 103125,   0 },
	{ IBV_RATE_200_GBPS,	 206250,   0 },
	{ IBV_RATE_300_GBPS,	 309375,   0 },
	/* Later rates: a multiple of the nominal rate again. */
	{ IBV_RATE_28_GBPS,	  28125,  11 },
	{ IBV_RATE_50_GBPS,	  53125,  20 },
	{ IBV_RATE_400_GBPS,	 425000, 160 },
	{ IBV_RATE_600_GBPS,	 637500, 240 },
	{ IBV_RATE_800_GBPS,	 850000, 320 },
	{ IBV_RATE_1200_GBPS,	1275000, 480 },
};

KQP_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kqp_rates); i++)
		if (kqp_rates[i].rate == rate)
			return kqp_rates[i].mult ? kqp_rates[i].mult : -1;
	return -1;
}

KQP_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; mult > 0 && i < ARRAY_SIZE(kqp_rates); i++)
		if (kqp_rates[i].mult == mult)
			return kqp_rates[i].rate;
	return IBV_RATE_MAX;
}

KQP_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kqp_rates); i++)
		if (kqp_rates[i].rate == rate)
			return kqp_rates[i].mbps;
	return -1;
}

KQP_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kqp_rates); i++)
		if (kqp_rates[i].mbps == mbps)
			return kqp_rates[i].rate;
	return IBV_RATE_MAX;
}

/*
 * The names below are libibverbs' words, letter for letter: logs,
 * scrapers and runbooks search for them.  Values out of range are
 * "unknown", as there.
 */
static const char *kqp_enum_str(const char *const *str, size_t n, int v)
{
	if (v < 0 || (size_t)v >= n || !str[v])
		return "unknown";
	return str[v];
}

KQP_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const str[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return kqp_enum_str(str, ARRAY_SIZE(str), node_type);
}

KQP_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const str[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	return kqp_enum_str(str, ARRAY_SIZE(str), port_state);
}

KQP_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return kqp_enum_str(str, ARRAY_SIZE(str), event);
}

KQP_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return kqp_enum_str(str, ARRAY_SIZE(str), status);
}
