/*
 * The nemesis suite's slow disk (faults/slow_disk.py): a library preloaded (LD_PRELOAD) into a
 * broker process, wirekafka's Python or Kafka's JVM alike, that delays each write and flush to a
 * regular file while a control file holds a delay.
 *
 * Why a preload: this machine has no device-mapper (no dm-delay) and cgroup v1 does not throttle
 * buffered writes, so the disk cannot be slowed below the process. Delaying the calls themselves
 * is what a slow disk looks like from the process: write(2), pwrite(2), writev(2) and fsync(2)
 * take long to return. Sockets, pipes and other non-regular files are left alone: the network is
 * not the disk.
 *
 * The control file, named by WIREKAFKA_SLOW_IO_FILE, holds the delay in microseconds; absent or
 * empty, nothing is delayed. It is looked at most every 50 ms, so a call costs one clock read
 * while the disk is healthy.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static long long next_look_ns;
static volatile long delay_us;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The delay now in force, re-read from the control file every 50 ms (races between threads
 * only re-read it twice). */
static long current_delay_us(void) {
    long long now = now_ns();
    if (now < next_look_ns)
        return delay_us;
    next_look_ns = now + 50000000LL;
    const char *path = getenv("WIREKAFKA_SLOW_IO_FILE");
    long value = 0;
    if (path != NULL) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            if (fscanf(f, "%ld", &value) != 1)
                value = 0;
            fclose(f);
        }
    }
    delay_us = value;
    return value;
}

static void maybe_wait(int fd) {
    long us = current_delay_us();
    struct stat st;
    if (us > 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        usleep((useconds_t)us);
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*sync_fn)(int);

/* The next definition of `name` (libc's), looked up once. */
#define REAL(name, type) static type real_##name; if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t count) {
    REAL(write, write_fn);
    maybe_wait(fd);
    return real_write(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite, pwrite_fn);
    maybe_wait(fd);
    return real_pwrite(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset) {
    REAL(pwrite64, pwrite64_fn);
    maybe_wait(fd);
    return real_pwrite64(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev, writev_fn);
    maybe_wait(fd);
    return real_writev(fd, iov, iovcnt);
}

int fsync(int fd) {
    REAL(fsync, sync_fn);
    maybe_wait(fd);
    return real_fsync(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync, sync_fn);
    maybe_wait(fd);
    return real_fdatasync(fd);
}
