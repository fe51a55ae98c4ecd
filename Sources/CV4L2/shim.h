#ifndef CALLROOM_CV4L2_SHIM_H
#define CALLROOM_CV4L2_SHIM_H
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/videodev2.h>
#include <libv4l2.h>
/* v4l2_ioctl is variadic: one typed wrapper per request used. */
static inline int callroom_v4l2_querycap(int fd, struct v4l2_capability *c) { return v4l2_ioctl(fd, VIDIOC_QUERYCAP, c); }
static inline int callroom_v4l2_s_fmt(int fd, struct v4l2_format *f) { return v4l2_ioctl(fd, VIDIOC_S_FMT, f); }
static inline int callroom_v4l2_s_parm(int fd, struct v4l2_streamparm *p) { return v4l2_ioctl(fd, VIDIOC_S_PARM, p); }
static inline int callroom_v4l2_open(const char *path) { return v4l2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC); }
#endif
