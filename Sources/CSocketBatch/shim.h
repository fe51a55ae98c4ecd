#ifndef CALLROOM_CSOCKETBATCH_SHIM_H
#define CALLROOM_CSOCKETBATCH_SHIM_H
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <stdint.h>

/* glibc declares sendmmsg and struct mmsghdr only under _GNU_SOURCE, which would make these
   headers disagree with Swift's Glibc module; the kernel ABI is stable, so declare them here. */
struct callroom_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
extern int sendmmsg(int fd, struct callroom_mmsghdr *msgvec, unsigned int vlen, int flags);
extern int recvmmsg(int fd, struct callroom_mmsghdr *msgvec, unsigned int vlen, int flags, struct timespec *timeout);

/* The calling thread's kernel name (top -H, /proc/self/task/N/comm; 15 bytes at most), the same
   way: prctl(PR_SET_NAME) is variadic and pthread_setname_np needs _GNU_SOURCE. */
extern int prctl(int option, ...);
static inline int callroom_set_thread_name(const char *name) { return prctl(15 /* PR_SET_NAME */, name, 0, 0, 0); }

/* Points message i of a receive vector at its buffer, iovec and source address slot, and (when
   control is not NULL) at control_size bytes of ancillary data for its receive timestamp. */
static inline void callroom_prepare_receive(struct callroom_mmsghdr *msgs, struct iovec *iovs, struct sockaddr_in *addrs,
                                            unsigned char *buffers, size_t size, unsigned int count,
                                            unsigned char *control, size_t control_size) {
    memset(msgs, 0, sizeof(struct callroom_mmsghdr) * (size_t)count);
    for (unsigned int i = 0; i < count; i++) {
        iovs[i].iov_base = buffers + (size_t)i * size;
        iovs[i].iov_len = size;
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &addrs[i];
        if (control) msgs[i].msg_hdr.msg_control = control + (size_t)i * control_size;
    }
}

/* Bytes of ancillary data one message needs for a SO_TIMESTAMPNS timestamp. */
static inline size_t callroom_timestamp_control_size(void) { return CMSG_SPACE(sizeof(struct timespec)); }

/* Asks the kernel to stamp each datagram received on fd with its arrival time (CLOCK_REALTIME). */
static inline int callroom_enable_receive_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

/* The arrival time of a received message in CLOCK_REALTIME nanoseconds, or 0 when it carries none. */
static inline long long callroom_message_timestamp_ns(struct callroom_mmsghdr *m) {
    struct msghdr *h = &m->msg_hdr;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
    }
    return 0;
}

/* CLOCK_REALTIME now, in nanoseconds (the clock receive timestamps use). */
static inline long long callroom_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Receives up to count datagrams without blocking (one recvmmsg). Returns how many, 0 when none.
   control_size is what callroom_prepare_receive was given (0 without timestamps). */
static inline int callroom_receive_many(int fd, struct callroom_mmsghdr *msgs, unsigned int count, size_t control_size) {
    for (unsigned int i = 0; i < count; i++) {
        msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
        msgs[i].msg_hdr.msg_controllen = msgs[i].msg_hdr.msg_control ? control_size : 0;
        msgs[i].msg_hdr.msg_flags = 0;
    }
    int n = recvmmsg(fd, msgs, count, MSG_DONTWAIT, NULL);
    return n < 0 ? 0 : n;
}

/* Sends one datagram to up to 64 IPv4 addresses with one sendmmsg. Returns how many were sent. */
static inline int callroom_send_to_many(int fd, const struct sockaddr_in *addrs, int count, const void *buf, size_t len) {
    struct callroom_mmsghdr msgs[64];
    struct iovec iov;
    int sent = 0;
    if (count > 64) count = 64;
    iov.iov_base = (void *)buf;
    iov.iov_len = len;
    memset(msgs, 0, sizeof(struct callroom_mmsghdr) * (size_t)count);
    for (int i = 0; i < count; i++) {
        msgs[i].msg_hdr.msg_name = (void *)&addrs[i];
        msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
        msgs[i].msg_hdr.msg_iov = &iov;
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    while (sent < count) {
        int n = sendmmsg(fd, msgs + sent, (unsigned int)(count - sent), MSG_DONTWAIT);
        if (n <= 0) break;
        sent += n;
    }
    return sent;
}

/* epoll through plain types (struct epoll_event is packed on x86_64). */
static inline int callroom_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int callroom_epoll_add(int ep, int fd, uint64_t tag) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static inline int callroom_epoll_del(int ep, int fd) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    return epoll_ctl(ep, EPOLL_CTL_DEL, fd, &ev);
}

/* Waits up to timeout_ms; writes the tags of up to max readable descriptors. Returns how many. */
static inline int callroom_epoll_wait(int ep, uint64_t *tags, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(ep, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) tags[i] = evs[i].data.u64;
    return n < 0 ? 0 : n;
}
#endif
