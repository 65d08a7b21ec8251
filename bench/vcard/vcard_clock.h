/* The virtual sound card's arithmetic (bench/vcard): its crystal against this machine's
 * CLOCK_MONOTONIC_RAW, and its DMA pointer's period steps. Pure: vcard_test.c tests it. */
#ifndef TUTTI_VCARD_CLOCK_H
#define TUTTI_VCARD_CLOCK_H

#include <math.h>
#include <stdint.h>

/* A crystal `ppm` parts per million fast (negative: slow) of a nominal `rate`, running
 * since `origin_ns` (CLOCK_MONOTONIC_RAW): frame k is played at origin_ns + k / true_rate. */
typedef struct {
    int64_t origin_ns;
    double true_rate; /* frames per true (RAW) second */
} vcard_clock;

static inline vcard_clock vcard_clock_make(int64_t origin_ns, unsigned rate, double ppm) {
    vcard_clock c = {origin_ns, (double)rate * (1.0 + ppm * 1e-6)};
    return c;
}

/* Frames the crystal has played by `now_ns`: those whose instant has come. */
static inline uint64_t vcard_frames_at(const vcard_clock *c, int64_t now_ns) {
    if (now_ns <= c->origin_ns) return 0;
    return (uint64_t)floor((double)(now_ns - c->origin_ns) * c->true_rate / 1e9);
}

/* The instant frame `frame` is played (the first nanosecond at which it has). */
static inline int64_t vcard_instant_of(const vcard_clock *c, uint64_t frame) {
    return c->origin_ns + (int64_t)ceil((double)frame * 1e9 / c->true_rate);
}

/* What the DMA pointer says of `frames` played: whole periods only, as its interrupt does. */
static inline uint64_t vcard_dma_pointer(uint64_t frames, uint64_t period) {
    return period ? frames / period * period : frames;
}

/* A sample of `format` (0: S16_LE, 1: S32_LE, 2: FLOAT_LE) as float, exactly for S16. */
static inline float vcard_sample(const void *base, unsigned format, uint64_t index) {
    switch (format) {
    case 0: return (float)((const int16_t *)base)[index] / 32768.0f;
    case 1: return (float)((double)((const int32_t *)base)[index] / 2147483648.0);
    default: return ((const float *)base)[index];
    }
}

/* `count` samples of `format` from `base` (starting at sample `first`) as floats into `out`:
 * vcard_sample's conversion, a loop per format. */
static inline void vcard_samples(float *out, const void *base, unsigned format, uint64_t first, uint64_t count) {
    switch (format) {
    case 0: {
        const int16_t *in = (const int16_t *)base + first;
        for (uint64_t i = 0; i < count; i++) out[i] = (float)in[i] / 32768.0f;
        break;
    }
    case 1: {
        const int32_t *in = (const int32_t *)base + first;
        for (uint64_t i = 0; i < count; i++) out[i] = (float)((double)in[i] / 2147483648.0);
        break;
    }
    default: {
        const float *in = (const float *)base + first;
        for (uint64_t i = 0; i < count; i++) out[i] = in[i];
    }
    }
}

#endif
