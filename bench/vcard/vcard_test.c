/* Unit tests of the virtual sound card's arithmetic (vcard_clock.h). */
#include <stdio.h>
#include <stdlib.h>

#include "vcard_clock.h"

static int failures = 0;
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "vcard_test: %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fprintf(stderr, "\n");                         \
            failures++;                                    \
        }                                                  \
    } while (0)

int main(void) {
    /* A true crystal: 48,000 frames a second exactly; none before its origin. */
    vcard_clock c = vcard_clock_make(1000000000, 48000, 0);
    CHECK(vcard_frames_at(&c, 999999999) == 0, "before the origin");
    CHECK(vcard_frames_at(&c, 1000000000) == 0, "at the origin");
    CHECK(vcard_frames_at(&c, 2000000000) == 48000, "one second: %llu", (unsigned long long)vcard_frames_at(&c, 2000000000));
    CHECK(vcard_frames_at(&c, 1000020833) == 0 && vcard_frames_at(&c, 1000020834) == 1, "a frame is 20833.3 ns");
    /* Each frame's instant is the first nanosecond at which it counts as played. */
    for (uint64_t k = 0; k < 200000; k += 7) {
        int64_t t = vcard_instant_of(&c, k);
        CHECK(vcard_frames_at(&c, t) >= k && (t == c.origin_ns || vcard_frames_at(&c, t - 1) < k), "frame %llu", (unsigned long long)k);
    }
    /* 200 ppm fast: 9.6 frames a second more; 500 ppm slow: 24 fewer; an hour's drift exact. */
    vcard_clock fast = vcard_clock_make(0, 48000, 200), slow = vcard_clock_make(0, 48000, -500);
    CHECK(vcard_frames_at(&fast, 10000000000LL) == 480096, "fast: %llu", (unsigned long long)vcard_frames_at(&fast, 10000000000LL));
    CHECK(vcard_frames_at(&slow, 10000000000LL) == 479760, "slow: %llu", (unsigned long long)vcard_frames_at(&slow, 10000000000LL));
    CHECK(vcard_frames_at(&fast, 3600000000000LL) == 172834560, "an hour fast");
    /* The DMA pointer: whole periods only. */
    CHECK(vcard_dma_pointer(0, 480) == 0 && vcard_dma_pointer(479, 480) == 0 && vcard_dma_pointer(480, 480) == 480, "periods");
    CHECK(vcard_dma_pointer(1919, 480) == 1440 && vcard_dma_pointer(5, 0) == 5, "periods, and none");
    /* Samples: S16 exactly, S32 and float as they are. */
    int16_t s16[] = {-32768, -1, 0, 1, 32767};
    CHECK(vcard_sample(s16, 0, 0) == -1.0f && vcard_sample(s16, 0, 2) == 0.0f && vcard_sample(s16, 0, 4) == 32767.0f / 32768.0f, "S16");
    int32_t s32[] = {INT32_MIN, 1 << 30};
    CHECK(vcard_sample(s32, 1, 0) == -1.0f && vcard_sample(s32, 1, 1) == 0.5f, "S32");
    float f[] = {0.25f};
    CHECK(vcard_sample(f, 2, 0) == 0.25f, "float");
    /* The loops convert as vcard_sample does, from any sample on. */
    float out[5];
    vcard_samples(out, s16, 0, 1, 4);
    CHECK(out[0] == vcard_sample(s16, 0, 1) && out[3] == vcard_sample(s16, 0, 4), "S16 run");
    vcard_samples(out, s32, 1, 0, 2);
    CHECK(out[0] == -1.0f && out[1] == 0.5f, "S32 run");
    vcard_samples(out, f, 2, 0, 1);
    CHECK(out[0] == 0.25f, "float run");
    if (failures) {
        fprintf(stderr, "vcard_test: %d failed\n", failures);
        return 1;
    }
    printf("vcard_test: all passed\n");
    return 0;
}
