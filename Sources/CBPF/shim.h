#ifndef CALLROOM_CBPF_SHIM_H
#define CALLROOM_CBPF_SHIM_H
/* libbpf at the edge: load the relay's fast-path object, attach it with a tcx link (which the
   kernel removes when the process exits, however it exits), and read and write its maps. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "relay_maps.h"

/* Not in Debian 12's uapi headers; stable kernel ABI since Linux 6.6. */
#define CALLROOM_BPF_TCX_INGRESS 46

struct callroom_bpf {
    struct bpf_object *obj;
    int prog_fd, config_fd, members_fd, rooms_fd, stats_fd;
    int link_fd, stats_enable_fd;
    int cpus;
    volatile struct cr_level *levels; /* cr_levels, mapped read-only */
};

static int callroom_bpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args) {
    (void)level; (void)fmt; (void)args;
    return 0;
}

/* Opens and loads the object; returns 0 or a negative errno. */
static inline int callroom_bpf_open(const char *path, struct callroom_bpf *b) {
    memset(b, 0, sizeof *b);
    b->link_fd = b->stats_enable_fd = -1;
    libbpf_set_print(callroom_bpf_quiet);
    b->obj = bpf_object__open_file(path, NULL);
    if (!b->obj) return -errno;
    int err = bpf_object__load(b->obj);
    if (err) { bpf_object__close(b->obj); b->obj = NULL; return err; }
    struct bpf_program *p = bpf_object__find_program_by_name(b->obj, "callroom_relay");
    struct bpf_map *cfg = bpf_object__find_map_by_name(b->obj, "cr_config");
    struct bpf_map *mem = bpf_object__find_map_by_name(b->obj, "cr_members");
    struct bpf_map *rooms = bpf_object__find_map_by_name(b->obj, "cr_rooms");
    struct bpf_map *stats = bpf_object__find_map_by_name(b->obj, "cr_stats");
    struct bpf_map *levels = bpf_object__find_map_by_name(b->obj, "cr_levels");
    if (!p || !cfg || !mem || !rooms || !stats || !levels) { bpf_object__close(b->obj); b->obj = NULL; return -ENOENT; }
    b->prog_fd = bpf_program__fd(p);
    b->config_fd = bpf_map__fd(cfg);
    b->members_fd = bpf_map__fd(mem);
    b->rooms_fd = bpf_map__fd(rooms);
    b->stats_fd = bpf_map__fd(stats);
    b->cpus = libbpf_num_possible_cpus();
    if (b->cpus <= 0 || b->cpus > 1024) { bpf_object__close(b->obj); b->obj = NULL; return -EINVAL; }
    void *m = mmap(NULL, sizeof(struct cr_level) * CR_MAX_MEMBERS, PROT_READ, MAP_SHARED, bpf_map__fd(levels), 0);
    if (m == MAP_FAILED) { int e = -errno; bpf_object__close(b->obj); b->obj = NULL; return e; }
    b->levels = m;
    return 0;
}

/* Sets where the relay listens (network byte order) and what one member may send (packets and
   bytes a second, audio then video; 0: no limit), and attaches to ifindex's ingress. */
static inline int callroom_bpf_attach(struct callroom_bpf *b, uint32_t ip_be, uint16_t port_be, int ifindex,
                                      uint64_t audio_pps, uint64_t audio_bps, uint64_t video_pps, uint64_t video_bps) {
    uint32_t zero = 0;
    struct cr_config c;
    memset(&c, 0, sizeof c);
    c.relay_ip = ip_be;
    c.relay_port = port_be;
    c.ifindex = (uint32_t)ifindex;
    c.packets_per_second[0] = audio_pps;
    c.bytes_per_second[0] = audio_bps;
    c.packets_per_second[1] = video_pps;
    c.bytes_per_second[1] = video_bps;
    if (bpf_map_update_elem(b->config_fd, &zero, &c, BPF_ANY)) return -errno;
    int fd = bpf_link_create(b->prog_fd, ifindex, (enum bpf_attach_type)CALLROOM_BPF_TCX_INGRESS, NULL);
    if (fd < 0) return fd;
    b->link_fd = fd;
    /* Run-time accounting for the program (needs CAP_SYS_ADMIN; optional). */
    b->stats_enable_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    return 0;
}

static inline void callroom_bpf_close(struct callroom_bpf *b) {
    if (b->link_fd >= 0) close(b->link_fd);
    if (b->stats_enable_fd >= 0) close(b->stats_enable_fd);
    b->link_fd = b->stats_enable_fd = -1;
    if (b->levels) munmap((void *)b->levels, sizeof(struct cr_level) * CR_MAX_MEMBERS);
    b->levels = NULL;
    if (b->obj) bpf_object__close(b->obj);
    b->obj = NULL;
}

/* A sender: its room, audio SSRC, level slot, video SSRC, CR_AUDIO_ON / CR_VIDEO_ON, and which
   of the room's destinations (bit i: entry i of its cr_room list) get its video. */
static inline int callroom_bpf_set_member(struct callroom_bpf *b, uint32_t ip_be, uint16_t port_be, uint32_t room, uint32_t ssrc,
                                          uint32_t slot, uint32_t video_ssrc, uint32_t flags, uint64_t video_mask) {
    if (slot >= CR_MAX_MEMBERS) return -E2BIG;
    struct cr_addr k = {.ip = ip_be, .port = port_be};
    struct cr_member m;
    memset(&m, 0, sizeof m);
    m.room = room;
    m.ssrc = ssrc;
    m.slot = slot;
    m.video_ssrc = video_ssrc;
    m.flags = flags;
    m.video_mask = video_mask;
    m.video_count = (uint32_t)__builtin_popcountll(video_mask);
    return bpf_map_update_elem(b->members_fd, &k, &m, BPF_ANY) ? -errno : 0;
}

static inline int callroom_bpf_delete_member(struct callroom_bpf *b, uint32_t ip_be, uint16_t port_be) {
    struct cr_addr k = {.ip = ip_be, .port = port_be};
    return bpf_map_delete_elem(b->members_fd, &k) ? -errno : 0;
}

/* The level and time the program last stored in a slot (read from the shared mapping). */
static inline void callroom_bpf_level(const struct callroom_bpf *b, uint32_t slot, uint32_t *level, uint64_t *last_ns) {
    if (!b->levels || slot >= CR_MAX_MEMBERS) { *level = 127; *last_ns = 0; return; }
    *last_ns = b->levels[slot].last_ns;
    *level = b->levels[slot].level;
}

/* Replaces a room's destination list (at most CR_MAX_ROOM addresses). */
static inline int callroom_bpf_set_room(struct callroom_bpf *b, uint32_t room, const uint32_t *ips_be, const uint16_t *ports_be, uint32_t count) {
    if (count > CR_MAX_ROOM) return -E2BIG;
    struct cr_room r;
    memset(&r, 0, sizeof r);
    r.count = count;
    for (uint32_t i = 0; i < count; i++) { r.members[i].ip = ips_be[i]; r.members[i].port = ports_be[i]; }
    return bpf_map_update_elem(b->rooms_fd, &room, &r, BPF_ANY) ? -errno : 0;
}

static inline int callroom_bpf_delete_room(struct callroom_bpf *b, uint32_t room) {
    return bpf_map_delete_elem(b->rooms_fd, &room) ? -errno : 0;
}

/* Sums the per-CPU counters into out[CR_STATS]. */
static inline int callroom_bpf_stats(struct callroom_bpf *b, uint64_t *out) {
    uint64_t values[1024];
    for (uint32_t k = 0; k < CR_STATS; k++) {
        out[k] = 0;
        if (bpf_map_lookup_elem(b->stats_fd, &k, values)) return -errno;
        for (int c = 0; c < b->cpus; c++) out[k] += values[c];
    }
    return 0;
}

/* The program's accumulated run time and run count (0 when run-time stats are off). */
static inline int callroom_bpf_run_time(struct callroom_bpf *b, uint64_t *ns, uint64_t *count) {
    struct bpf_prog_info info;
    uint32_t len = sizeof info;
    memset(&info, 0, sizeof info);
    if (bpf_obj_get_info_by_fd(b->prog_fd, &info, &len)) return -errno;
    *ns = info.run_time_ns;
    *count = info.run_cnt;
    return 0;
}
#endif
