// CallRoom's kernel fast path for the media relay: a TC (tcx) ingress program that forwards each
// RTP datagram from a bound participant to the other members of its room inside the kernel
// (one bpf_clone_redirect per destination, addresses and checksums rewritten in place) and
// drops the original. Audio goes to every other member; video only to the members that
// subscribed to the sender's video (its video_mask over the room's destination list).
// Everything it does not recognise (binds, unknown senders, SSRC mismatches, a muted member's
// audio, paused video, rooms larger than CR_MAX_ROOM, IPv4 options, fragments) goes up to the
// relay's sockets as before.
// Packets that are not for this relay return TC_ACT_UNSPEC (tcx: "next"), so other programs on the
// same interface — another callroomd's among them — still see them.
// The relay's workers keep the maps in sync with its membership; see RelayFastPath.swift.
//
// Build: scripts/build-bpf.sh (clang -O2 -g -target bpf -I Sources/CBPF …)
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "relay_maps.h"  /* Sources/CBPF: the map layouts, shared with the Swift side */

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cr_config);
} cr_config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, CR_MAX_MEMBERS);
    __type(key, struct cr_addr);
    __type(value, struct cr_member);
} cr_members SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CR_MAX_MEMBERS);
    __uint(map_flags, BPF_F_MMAPABLE);
    __type(key, __u32);
    __type(value, struct cr_level);
} cr_levels SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct cr_room);
} cr_rooms SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, CR_MAX_MEMBERS);
    __type(key, __u32);
    __type(value, struct cr_budget);
} cr_budgets SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, CR_STATS);
    __type(key, __u32);
    __type(value, __u64);
} cr_stats SEC(".maps");

#define IP_OFF ETH_HLEN
#define IP_CSUM_OFF (IP_OFF + offsetof(struct iphdr, check))
#define IP_SRC_OFF (IP_OFF + offsetof(struct iphdr, saddr))
#define IP_DST_OFF (IP_OFF + offsetof(struct iphdr, daddr))
#define UDP_OFF (IP_OFF + sizeof(struct iphdr))
#define UDP_CSUM_OFF (UDP_OFF + offsetof(struct udphdr, check))
#define UDP_SRC_OFF (UDP_OFF + offsetof(struct udphdr, source))
#define UDP_DST_OFF (UDP_OFF + offsetof(struct udphdr, dest))
#define L4_FLAGS (BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0)

static __always_inline void count(__u32 which, __u64 n) {
    __u64 *v = bpf_map_lookup_elem(&cr_stats, &which);
    if (v) *v += n;
}

/* One token bucket (nanotokens) refilled for `elapsed` ns at `rate` a second, capped at one second's
   worth; takes `cost` tokens if there are that many. Rate 0: no limit. The same arithmetic as
   the relay's SenderBudget. */
static __always_inline int take(__u64 *bucket, __u64 rate, __u64 elapsed, __u64 cost) {
    if (rate == 0) return 1;
    __u64 capacity = rate * 1000000000ULL;
    if (elapsed > 1000000000ULL) elapsed = 1000000000ULL;
    __u64 t = *bucket + elapsed * rate;
    if (t > capacity) t = capacity;
    __u64 need = cost * 1000000000ULL;
    if (t < need) { *bucket = t; return 0; }
    *bucket = t - need;
    return 1;
}

/* Whether this packet is within its sender's budget (per stream: packets and bytes a second). */
static __always_inline int within_budget(const struct cr_config *cfg, const struct cr_member *m, __u32 ssrc, int video, __u64 len) {
    __u32 slot = m->slot;
    struct cr_budget *b = bpf_map_lookup_elem(&cr_budgets, &slot);
    if (!b) return 1;
    __u64 now = bpf_ktime_get_ns();
    int k = video ? 1 : 0;
    if (b->ssrc != m->ssrc) {
        /* A new member in this slot: full buckets. */
        b->ssrc = m->ssrc;
        b->last_ns[0] = b->last_ns[1] = now;
        b->packets[0] = cfg->packets_per_second[0] * 1000000000ULL;
        b->packets[1] = cfg->packets_per_second[1] * 1000000000ULL;
        b->bytes[0] = cfg->bytes_per_second[0] * 1000000000ULL;
        b->bytes[1] = cfg->bytes_per_second[1] * 1000000000ULL;
    }
    __u64 elapsed = now - b->last_ns[k];
    b->last_ns[k] = now;
    __u64 p = b->packets[k], q = b->bytes[k];
    int ok = take(&p, cfg->packets_per_second[k], elapsed, 1);
    int ok_bytes = take(&q, cfg->bytes_per_second[k], elapsed, len);
    if (ok && ok_bytes) {
        b->packets[k] = p;
        b->bytes[k] = q;
        return 1;
    }
    /* Refused: the refill counts, the take does not. */
    p = b->packets[k];
    q = b->bytes[k];
    take(&p, cfg->packets_per_second[k], elapsed, 0);
    take(&q, cfg->bytes_per_second[k], elapsed, 0);
    b->packets[k] = p;
    b->bytes[k] = q;
    return 0;
}

/* Rewrites a 4-byte IP address field and fixes the IP and UDP checksums. */
static __always_inline int set_ip(struct __sk_buff *skb, __u32 off, __be32 from, __be32 to) {
    if (from == to) return 0;
    if (bpf_l4_csum_replace(skb, UDP_CSUM_OFF, from, to, L4_FLAGS | sizeof(to))) return -1;
    if (bpf_l3_csum_replace(skb, IP_CSUM_OFF, from, to, sizeof(to))) return -1;
    return bpf_skb_store_bytes(skb, off, &to, sizeof(to), 0);
}

/* Rewrites a UDP port and fixes the UDP checksum. */
static __always_inline int set_port(struct __sk_buff *skb, __u32 off, __be16 from, __be16 to) {
    if (from == to) return 0;
    if (bpf_l4_csum_replace(skb, UDP_CSUM_OFF, from, to, BPF_F_MARK_MANGLED_0 | sizeof(to))) return -1;
    return bpf_skb_store_bytes(skb, off, &to, sizeof(to), 0);
}

SEC("tc")
int callroom_relay(struct __sk_buff *skb) {
    void *data = (void *)(long)skb->data;
    void *end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) return TC_ACT_UNSPEC;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP) return TC_ACT_UNSPEC;
    if (ip->frag_off & bpf_htons(0x3FFF)) return TC_ACT_UNSPEC;
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end) return TC_ACT_UNSPEC;
    __u32 zero = 0;
    struct cr_config *cfg = bpf_map_lookup_elem(&cr_config, &zero);
    if (!cfg || udp->dest != cfg->relay_port || ip->daddr != cfg->relay_ip) return TC_ACT_UNSPEC;
    __u8 *rtp = (void *)(udp + 1);
    if ((void *)(rtp + 12) > end || (rtp[0] & 0xC0) != 0x80) return TC_ACT_UNSPEC;  /* binds ('C') go up */

    struct cr_addr from = {.ip = ip->saddr, .port = udp->source};
    struct cr_member *m = bpf_map_lookup_elem(&cr_members, &from);
    if (!m) return TC_ACT_UNSPEC;
    __u32 ssrc = ((__u32)rtp[8] << 24) | ((__u32)rtp[9] << 16) | ((__u32)rtp[10] << 8) | rtp[11];
    /* Which stream: the member's audio or its video; anything else (another SSRC, a muted
       member's audio, paused video) the relay counts and drops. */
    int video;
    if (ssrc == m->ssrc && (m->flags & CR_AUDIO_ON)) video = 0;
    else if (ssrc == m->video_ssrc && ssrc != 0 && (m->flags & CR_VIDEO_ON)) video = 1;
    else return TC_ACT_UNSPEC;
    __u64 mask = video ? m->video_mask : ~(__u64)0;
    __u32 video_count = m->video_count;
    struct cr_room *room = bpf_map_lookup_elem(&cr_rooms, &m->room);
    if (!room) return TC_ACT_UNSPEC;

    /* Bytes are counted as the relay's workers count them: the UDP payload. */
    __u32 len = skb->len > UDP_OFF + sizeof(struct udphdr) ? skb->len - UDP_OFF - sizeof(struct udphdr) : 0;
    count(CR_RECEIVED, 1);
    count(CR_RECEIVED_BYTES, len);
    /* Over the sender's budget: dropped here, as the workers drop it. */
    if (!within_budget(cfg, m, ssrc, video, len)) {
        count(CR_RATE_LIMITED, 1);
        return TC_ACT_SHOT;
    }

    /* RFC 6464 level, when it is the first element of a one-byte extension block (as CallRoom's
       clients send it), for the relay's dominant-speaker tracker. */
    if (!video && (rtp[0] & 0x1F) == 0x10 && (void *)(rtp + 18) <= end && rtp[12] == 0xBE && rtp[13] == 0xDE &&
        (rtp[16] >> 4) == 1) {
        struct cr_level *l = bpf_map_lookup_elem(&cr_levels, &m->slot);
        if (l) {
            l->level = rtp[17] & 0x7F;
            l->last_ns = bpf_ktime_get_ns();
        }
    }


    /* Copies leave from the relay's address and port, back out of the interface they came in on
       (Ethernet addresses swapped: the way back to every client is the way its packets came). */
    __u8 macs[12];
    if (bpf_skb_load_bytes(skb, 0, macs, 12)) return TC_ACT_UNSPEC;
    __u8 swapped[12];
    __builtin_memcpy(swapped, macs + 6, 6);
    __builtin_memcpy(swapped + 6, macs, 6);
    if (bpf_skb_store_bytes(skb, 0, swapped, 12, 0)) return TC_ACT_SHOT;
    __be32 cur_ip_src = from.ip, cur_ip_dst = cfg->relay_ip;
    __be16 cur_src = from.port, cur_dst = cfg->relay_port;
    __be32 relay_ip = cfg->relay_ip;
    __be16 relay_port = cfg->relay_port;
    __u32 ifindex = skb->ifindex;
    if (set_ip(skb, IP_SRC_OFF, cur_ip_src, relay_ip) || set_port(skb, UDP_SRC_OFF, cur_src, relay_port))
        return TC_ACT_SHOT;

    __u32 n = room->count;
    __u64 sent = 0;
    for (__u32 i = 0; i < CR_MAX_ROOM; i++) {
        if (i >= n) break;
        struct cr_addr to = room->members[i];
        if (to.ip == from.ip && to.port == from.port) continue;
        if (!((mask >> i) & 1)) continue;  /* video this destination did not subscribe to */
        if (set_ip(skb, IP_DST_OFF, cur_ip_dst, to.ip)) break;
        cur_ip_dst = to.ip;
        if (set_port(skb, UDP_DST_OFF, cur_dst, to.port)) break;
        cur_dst = to.port;
        if (bpf_clone_redirect(skb, ifindex, 0) == 0) sent++;
    }
    count(CR_FORWARDED, sent);
    /* Every member but the sender should have had a copy of audio, every subscriber a copy of
       video (counted outside the loop: a second counter inside it multiplies the verifier's
       states past its limit). */
    __u64 others = n > 0 ? n - 1 : 0;
    __u64 expected = video ? (video_count < others ? video_count : others) : others;
    if (expected > sent) count(CR_SEND_FAILED, expected - sent);
    if (video) {
        count(CR_VIDEO_FORWARDED, sent);
        count(CR_VIDEO_WITHHELD, others - expected);
    }
    count(CR_FORWARDED_BYTES, sent * len);
    return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
