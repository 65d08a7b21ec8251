// A clock of its own for another program, for bench/network: LD_PRELOAD this with
// SCALED_CLOCK_PPM=200 and every CLOCK_MONOTONIC reading (and its raw, coarse and boot-time
// kin) runs that much fast from the program's first reading on; with
// SCALED_CLOCK_OFFSET_MS=37000 it reads 37 s later (a server that rebooted). CLOCK_REALTIME is
// left alone, so that a sound server's wall-clock stamps keep the host's rate: the device
// keeps its own crystal. This is what a drifting host looks like to snapclient, whose time
// base is CLOCK_MONOTONIC (libfaketime's speed option moves CLOCK_MONOTONIC onto the
// epoch, which breaks its PulseAudio timing). tutti has the same, built in:
// TUTTI_CLOCK_RATE_PPM and TUTTI_CLOCK_OFFSET_MS.
//   cc -shared -fPIC -O2 -o scaledclock.so scaledclock.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static double rate = 1.0;
static int64_t offset = 0;
static int64_t start[16];
static int started[16];

static void setup(void) {
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *ppm = getenv("SCALED_CLOCK_PPM");
    if (ppm) rate = 1.0 + atof(ppm) * 1e-6;
    const char *ms = getenv("SCALED_CLOCK_OFFSET_MS");
    if (ms) offset = (int64_t)(atof(ms) * 1e6);
}

int clock_gettime(clockid_t id, struct timespec *tp) {
    if (!real_clock_gettime) setup();
    int rc = real_clock_gettime(id, tp);
    if (rc != 0 || (rate == 1.0 && offset == 0) || id < 0 || id >= 16) return rc;
    if (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW && id != CLOCK_MONOTONIC_COARSE && id != CLOCK_BOOTTIME) return rc;
    int64_t now = (int64_t)tp->tv_sec * 1000000000LL + tp->tv_nsec;
    if (!__atomic_load_n(&started[id], __ATOMIC_ACQUIRE)) {
        int64_t expected = 0;
        __atomic_compare_exchange_n(&start[id], &expected, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        __atomic_store_n(&started[id], 1, __ATOMIC_RELEASE);
    }
    int64_t origin = __atomic_load_n(&start[id], __ATOMIC_ACQUIRE);
    int64_t scaled = origin + offset + (int64_t)((double)(now - origin) * rate);
    tp->tv_sec = scaled / 1000000000LL;
    tp->tv_nsec = scaled % 1000000000LL;
    return rc;
}
