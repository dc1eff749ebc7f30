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

/* Our own wording, as for ibv_wc_status_str(): printed, never parsed. */
KQP_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	switch (node_type) {
	case IBV_NODE_CA:
		return "InfiniBand/RoCE channel adapter";
	case IBV_NODE_SWITCH:
		return "InfiniBand switch";
	case IBV_NODE_ROUTER:
		return "InfiniBand router";
	case IBV_NODE_RNIC:
		return "iWARP RNIC";
	case IBV_NODE_USNIC:
		return "usNIC";
	case IBV_NODE_USNIC_UDP:
		return "usNIC over UDP";
	case IBV_NODE_UNSPECIFIED:
		return "unspecified node type";
	default:
		return "unknown node type";
	}
}

/* The states' own names. */
KQP_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	switch (port_state) {
	case IBV_PORT_NOP:
		return "PORT_NOP";
	case IBV_PORT_DOWN:
		return "PORT_DOWN";
	case IBV_PORT_INIT:
		return "PORT_INIT";
	case IBV_PORT_ARMED:
		return "PORT_ARMED";
	case IBV_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "PORT_ACTIVE_DEFER";
	default:
		return "unknown port state";
	}
}

KQP_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error (overrun)",
		[IBV_EVENT_QP_FATAL] = "QP fatal error",
		[IBV_EVENT_QP_REQ_ERR] = "QP invalid request error",
		[IBV_EVENT_QP_ACCESS_ERR] = "QP access error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration failed",
		[IBV_EVENT_DEVICE_FATAL] = "device fatal error",
		[IBV_EVENT_PORT_ACTIVE] = "port became active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID changed",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key table changed",
		[IBV_EVENT_SM_CHANGE] = "subnet manager changed",
		[IBV_EVENT_SRQ_ERR] = "SRQ error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration requested",
		[IBV_EVENT_GID_CHANGE] = "GID table changed",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal error",
	};

	if ((unsigned int)event >= ARRAY_SIZE(str) || !str[event])
		return "unknown event";
	return str[event];
}
