/* Map layouts shared by the relay's eBPF fast path (Resources/bpf/relay_fastpath.bpf.c) and the
   Swift side that fills the maps (CBPF shim.h, RelayFastPath.swift). One definition, two users. */
#ifndef CALLROOM_RELAY_MAPS_H
#define CALLROOM_RELAY_MAPS_H
#include <linux/types.h>

#define CR_MAX_ROOM 64
#define CR_MAX_MEMBERS 65536

struct cr_config {
    __be32 relay_ip;
    __be16 relay_port;
    __u16 pad;
    __u32 ifindex;
    __u32 pad2;
    /* What one member may send (the relay's SenderLimits; 0: no limit): [0] audio, [1] video. */
    __u64 packets_per_second[2];
    __u64 bytes_per_second[2];
};

/* One member's token buckets (nanotokens: 10^9 a token), by its level slot; [0] audio, [1] video.
   A slot given to a new member (another SSRC) starts full. */
struct cr_budget {
    __u64 last_ns[2];
    __u64 packets[2];
    __u64 bytes[2];
    __u32 ssrc;
    __u32 pad;
};

struct cr_addr {
    __be32 ip;
    __be16 port;
    __u16 pad;
};

/* cr_member.flags */
#define CR_AUDIO_ON 1u /* forward its audio SSRC's packets (off: a moderator muted it; they go up) */
#define CR_VIDEO_ON 2u /* forward its video SSRC's packets to video_mask (off: none, or paused) */

struct cr_member {
    __u32 room;
    __u32 ssrc;       /* audio */
    __u32 slot;       /* this member's entry in cr_levels */
    __u32 video_ssrc;
    __u32 flags;
    __u32 video_count; /* how many bits video_mask has set */
    __u64 video_mask; /* bit i: the room's destination i subscribed to this member's video */
};

/* Written by the program, read by the relay through a shared mapping (no system call). */
struct cr_level {
    __u64 last_ns; /* CLOCK_MONOTONIC time of the last packet with a level */
    __u32 level;   /* RFC 6464 level of that packet, 0 loud … 127 silent */
    __u32 pad;
};

struct cr_room {
    __u32 count;
    __u32 pad;
    struct cr_addr members[CR_MAX_ROOM];
};

enum { CR_RECEIVED, CR_RECEIVED_BYTES, CR_FORWARDED, CR_FORWARDED_BYTES, CR_SEND_FAILED,
       CR_VIDEO_FORWARDED, CR_VIDEO_WITHHELD, CR_RATE_LIMITED, CR_STATS };

#endif
