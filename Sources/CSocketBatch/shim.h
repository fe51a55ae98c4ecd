#ifndef CALLROOM_CSOCKETBATCH_SHIM_H
#define CALLROOM_CSOCKETBATCH_SHIM_H
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>

/* glibc declares sendmmsg and struct mmsghdr only under _GNU_SOURCE, which would make these
   headers disagree with Swift's Glibc module; the kernel ABI is stable, so declare them here. */
struct callroom_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
extern int sendmmsg(int fd, struct callroom_mmsghdr *msgvec, unsigned int vlen, int flags);

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
#endif
