/* tutti's virtual sound card: an ALSA external PCM plugin (ioplug), so that rooms, joins
 * and drift are measured on devices with crystals of their own, on a machine with no sound
 * card and no snd-aloop. Opened as `tutti_vcard:NAME,PPM` (deploy/test-setup.sh installs
 * it and its configuration).
 *
 * Its clock: a crystal PPM parts per million off this machine's CLOCK_MONOTONIC_RAW (fast
 * when positive), running from the PCM's first start for as long as the PCM is open. Its
 * DMA pointer advances in whole periods (those the application asked for), as a DAC's
 * interrupt does; the delay it reports counts the frames queued ahead of the crystal's
 * exact position (as a driver with a fine-grained position does); an application that
 * falls behind finds it in XRUN, and the frames it missed are played as zeros.
 *
 * What it records (when $TUTTI_VCARD_DIR is set): every frame the crystal plays, from the
 * first start to the close, in $TUTTI_VCARD_DIR/NAME.wav (float32, the stream's channels,
 * zeros where nothing was written or the PCM was stopped), and NAME.json with
 * {"start_ns": CLOCK_MONOTONIC ns at which frame 0 was played, "rate": frames per
 * CLOCK_MONOTONIC second (measured over the card's life at its close), "raw_rate": per
 * CLOCK_MONOTONIC_RAW second, "record_cpu_ns": the CPU time the recording itself took in
 * the player's threads (at the close; 0 before)}: frame k was heard at start_ns + k * 1e9 / rate.
 *
 * The recording is the rig's, not the player's (a DAC's DMA costs its application nothing),
 * yet it runs in the player's process, where it costs the same in every system: copying
 * 384 kB a second into a file's pages. So it counts its own CPU time (the thread's clock
 * around its writes), and a benchmark takes it out of the player's.
 */
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "vcard_clock.h"

typedef struct {
    snd_pcm_ioplug_t io;
    char name[96];
    double ppm;
    int timer_fd;
    /* The stream, once hw_params set it. */
    unsigned channels, rate, format; /* format: 0 S16_LE, 1 S32_LE, 2 FLOAT_LE */
    snd_pcm_uframes_t buffer_size, period_size;
    float *ring; /* buffer_size frames, interleaved */
    /* The crystal, from the first start. */
    int started_once;
    vcard_clock clock;
    /* The current run: the crystal's frame at its start, and how far it has played. */
    uint64_t run_origin;
    uint64_t run_played;
    int running;
    /* The recording: frames written so far (crystal frames from 0). */
    FILE *wav;
    uint64_t recorded;
    char dir[512];
    int64_t record_cpu_ns; /* the recording's own CPU time, in the threads that wrote it */
    /* CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW at the first start: at the close, the rate is
     * stated per CLOCK_MONOTONIC second (NTP slews it a few ppm off the raw clock). */
    int64_t start_mono, start_raw;
} vcard_t;

static int64_t now_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A float32 WAV header for `frames` frames of `channels` (its sizes patched at close). */
static void wav_header(FILE *f, unsigned channels, unsigned rate, uint64_t frames) {
    uint32_t data = (uint32_t)(frames * channels * 4 > 0xFFFFFFF0u ? 0xFFFFFFF0u : frames * channels * 4);
    uint32_t riff = 4 + 26 + 12 + 8 + data, fmt = 18, byte_rate = rate * channels * 4;
    uint16_t tag = 3, ch = (uint16_t)channels, align = (uint16_t)(channels * 4), bits = 32, zero16 = 0;
    fseek(f, 0, SEEK_SET);
    fwrite("RIFF", 1, 4, f); fwrite(&riff, 4, 1, f); fwrite("WAVE", 1, 4, f);
    fwrite("fmt ", 1, 4, f); fwrite(&fmt, 4, 1, f); fwrite(&tag, 2, 1, f); fwrite(&ch, 2, 1, f);
    fwrite(&rate, 4, 1, f); fwrite(&byte_rate, 4, 1, f); fwrite(&align, 2, 1, f); fwrite(&bits, 2, 1, f);
    fwrite(&zero16, 2, 1, f);
    fwrite("fact", 1, 4, f); uint32_t four = 4; fwrite(&four, 4, 1, f);
    uint32_t count = (uint32_t)(frames > 0xFFFFFFFFu ? 0xFFFFFFFFu : frames); fwrite(&count, 4, 1, f);
    fwrite("data", 1, 4, f); fwrite(&data, 4, 1, f);
    fseek(f, 0, SEEK_END);
}

/* Records the crystal's frames up to `frame` (exclusive): the run's own where the
 * application wrote them, zeros elsewhere. Returns how many of the run's were missing.
 * Whole spans at a time (a DAC's DMA costs its application nothing: the recording is the
 * rig's, and must not weigh on the player it measures). */
static uint64_t record_until(vcard_t *v, uint64_t frame) {
    static const float zeros[2 * 1024];
    uint64_t missing = 0;
    int64_t cpu = v->wav && v->recorded < frame ? now_ns(CLOCK_THREAD_CPUTIME_ID) : -1;
    while (v->recorded < frame) {
        uint64_t k = v->recorded, span;
        int in_run = v->running && k >= v->run_origin;
        uint64_t index = k - v->run_origin;
        if (in_run && index < v->io.appl_ptr) {
            /* Written frames, up to what was written, the frame asked for and the ring's end. */
            uint64_t slot = index % v->buffer_size;
            span = v->io.appl_ptr - index;
            if (span > frame - k) span = frame - k;
            if (span > v->buffer_size - slot) span = v->buffer_size - slot;
            if (v->wav) fwrite(v->ring + slot * v->channels, sizeof(float) * v->channels, span, v->wav);
        } else {
            /* Silence: up to the run's origin (before it), or to the frame asked for. */
            span = frame - k;
            if (v->running && k < v->run_origin && v->run_origin - k < span) span = v->run_origin - k;
            if (span > 2048 / v->channels) span = 2048 / v->channels; /* the zeros at hand */
            if (in_run) missing += span;
            if (v->wav) fwrite(zeros, sizeof(float) * v->channels, span, v->wav);
        }
        v->recorded += span;
    }
    if (cpu >= 0) v->record_cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return missing;
}

/* Running: the timer fires at every period boundary. Stopped (prepared, or after an XRUN):
 * it fires at once and stays readable (poll_revents does not read it), as a device that is
 * not running has room for a whole buffer and says so to every poll. */
static void arm_timer(vcard_t *v, int on) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (!on) {
        spec.it_value.tv_nsec = 1;
    } else {
        double period_ns = (double)v->period_size * 1e9 / v->clock.true_rate;
        /* The next period boundary of this run, on CLOCK_MONOTONIC. */
        uint64_t next = v->run_origin + (v->run_played / v->period_size + 1) * v->period_size;
        int64_t raw_wait = vcard_instant_of(&v->clock, next) - now_ns(CLOCK_MONOTONIC_RAW);
        if (raw_wait < 1000) raw_wait = 1000;
        int64_t first = now_ns(CLOCK_MONOTONIC) + raw_wait;
        spec.it_value.tv_sec = first / 1000000000;
        spec.it_value.tv_nsec = first % 1000000000;
        spec.it_interval.tv_sec = (time_t)(period_ns / 1e9);
        spec.it_interval.tv_nsec = (long)fmod(period_ns, 1e9);
    }
    timerfd_settime(v->timer_fd, on ? TFD_TIMER_ABSTIME : 0, &spec, NULL);
}

/* NAME.json: when frame 0 was played (CLOCK_MONOTONIC), and the frames per second of that
 * clock (`rate`; `raw_rate` per CLOCK_MONOTONIC_RAW second, the crystal's own definition). */
static void write_json(vcard_t *v, double mono_rate) {
    if (!v->dir[0]) return;
    char path[700], part[720];
    snprintf(path, sizeof path, "%s/%s.json", v->dir, v->name);
    snprintf(part, sizeof part, "%s.part", path);
    FILE *j = fopen(part, "w");
    if (!j) return;
    fprintf(j, "{\"start_ns\": %lld, \"rate\": %.6f, \"raw_rate\": %.6f, \"ppm\": %.3f, \"channels\": %u, \"nominal_rate\": %u, "
               "\"record_cpu_ns\": %lld}\n",
            (long long)v->start_mono, mono_rate, v->clock.true_rate, v->ppm, v->channels, v->rate, (long long)v->record_cpu_ns);
    fclose(j);
    rename(part, path);
}

static int vcard_start(snd_pcm_ioplug_t *io) {
    vcard_t *v = io->private_data;
    int64_t raw = now_ns(CLOCK_MONOTONIC_RAW), mono = now_ns(CLOCK_MONOTONIC);
    if (!v->started_once) {
        v->started_once = 1;
        v->clock = vcard_clock_make(raw, v->rate, v->ppm);
        if (v->dir[0]) {
            char path[700];
            snprintf(path, sizeof path, "%s/%s.wav", v->dir, v->name);
            v->wav = fopen(path, "w+b");
            if (v->wav) wav_header(v->wav, v->channels, v->rate, 0);
        }
        v->start_mono = mono;
        v->start_raw = raw;
        write_json(v, v->clock.true_rate);
    }
    /* The run starts at the crystal's next frame; what it played meanwhile was silence. */
    v->run_origin = vcard_frames_at(&v->clock, raw);
    record_until(v, v->run_origin);
    v->run_played = 0;
    v->running = 1;
    arm_timer(v, 1);
    return 0;
}

/* The crystal's progress in this run: whole periods, and the frames they played recorded. */
static snd_pcm_sframes_t vcard_pointer(snd_pcm_ioplug_t *io) {
    vcard_t *v = io->private_data;
    if (!v->running) return (snd_pcm_sframes_t)(v->run_played % v->buffer_size);
    uint64_t played = vcard_frames_at(&v->clock, now_ns(CLOCK_MONOTONIC_RAW)) - v->run_origin;
    uint64_t pointer = vcard_dma_pointer(played, v->period_size);
    if (pointer > v->run_played) {
        uint64_t missing = record_until(v, v->run_origin + pointer);
        v->run_played = pointer;
        if (missing) {
            /* It ran dry: zeros played, and the application is told (XRUN). */
            v->running = 0;
            arm_timer(v, 0);
            return -EPIPE;
        }
    }
    return (snd_pcm_sframes_t)(v->run_played % v->buffer_size);
}

static snd_pcm_sframes_t vcard_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas, snd_pcm_uframes_t offset,
                                        snd_pcm_uframes_t size) {
    vcard_t *v = io->private_data;
    /* Interleaved (the only access it offers): the frames are one run of samples, copied
     * into the ring in at most two spans (its wrap). */
    const char *base = (const char *)areas[0].addr + (areas[0].first + offset * areas[0].step) / 8;
    snd_pcm_uframes_t done = 0;
    while (done < size) {
        uint64_t slot = (io->appl_ptr + done) % v->buffer_size;
        snd_pcm_uframes_t span = size - done;
        if (span > v->buffer_size - slot) span = v->buffer_size - slot;
        vcard_samples(v->ring + slot * v->channels, base, v->format, done * v->channels, span * v->channels);
        done += span;
    }
    return (snd_pcm_sframes_t)size;
}

static int vcard_stop(snd_pcm_ioplug_t *io) {
    vcard_t *v = io->private_data;
    if (v->running) {
        vcard_pointer(io);
        v->running = 0;
    }
    arm_timer(v, 0);
    return 0;
}

static int vcard_prepare(snd_pcm_ioplug_t *io) {
    vcard_t *v = io->private_data;
    v->running = 0;
    v->run_played = 0;
    arm_timer(v, 0);
    if (v->ring) memset(v->ring, 0, v->buffer_size * v->channels * sizeof(float));
    return 0;
}

/* The frames queued ahead of the crystal's exact position (negative when it ran dry). */
static int vcard_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay) {
    vcard_t *v = io->private_data;
    if (!v->running) {
        *delay = (snd_pcm_sframes_t)(io->appl_ptr - v->run_played);
        return 0;
    }
    uint64_t played = vcard_frames_at(&v->clock, now_ns(CLOCK_MONOTONIC_RAW)) - v->run_origin;
    *delay = (snd_pcm_sframes_t)((int64_t)io->appl_ptr - (int64_t)played);
    return 0;
}

static int vcard_hw_params(snd_pcm_ioplug_t *io, snd_pcm_hw_params_t *params) {
    vcard_t *v = io->private_data;
    (void)params;
    v->channels = io->channels;
    v->rate = io->rate;
    v->format = io->format == SND_PCM_FORMAT_S16_LE ? 0 : io->format == SND_PCM_FORMAT_S32_LE ? 1 : 2;
    v->buffer_size = io->buffer_size;
    v->period_size = io->period_size;
    free(v->ring);
    v->ring = calloc(v->buffer_size * v->channels, sizeof(float));
    return v->ring ? 0 : -ENOMEM;
}

static int vcard_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents) {
    vcard_t *v = io->private_data;
    (void)nfds;
    uint64_t expirations;
    if ((pfd[0].revents & POLLIN) && v->running) {
        ssize_t n = read(v->timer_fd, &expirations, sizeof expirations);
        (void)n;
    }
    *revents = (pfd[0].revents & POLLIN) || !v->running ? POLLOUT : 0;
    return 0;
}

static int vcard_close(snd_pcm_ioplug_t *io) {
    vcard_t *v = io->private_data;
    if (v->running) vcard_pointer(io);
    /* The rate per CLOCK_MONOTONIC second over the card's life (a second at least), read
     * before the recording's last writes. */
    int64_t raw = now_ns(CLOCK_MONOTONIC_RAW) - v->start_raw, mono = now_ns(CLOCK_MONOTONIC) - v->start_mono;
    if (v->wav) {
        int64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
        fflush(v->wav);
        wav_header(v->wav, v->channels, v->rate, v->recorded);
        fclose(v->wav);
        v->record_cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    }
    if (v->started_once && raw > 1000000000 && mono > 0) write_json(v, v->clock.true_rate * (double)raw / (double)mono);
    close(v->timer_fd);
    free(v->ring);
    free(v);
    return 0;
}

static const snd_pcm_ioplug_callback_t callbacks = {
    .start = vcard_start,
    .stop = vcard_stop,
    .pointer = vcard_pointer,
    .transfer = vcard_transfer,
    .close = vcard_close,
    .hw_params = vcard_hw_params,
    .prepare = vcard_prepare,
    .poll_revents = vcard_poll_revents,
    .delay = vcard_delay,
};

SND_PCM_PLUGIN_DEFINE_FUNC(tutti_vcard) {
    snd_config_iterator_t i, next;
    const char *card = "card";
    double ppm = 0;
    (void)root;
    snd_config_for_each(i, next, conf) {
        snd_config_t *n = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(n, &id) < 0) continue;
        if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint")) continue;
        if (!strcmp(id, "name")) {
            if (snd_config_get_string(n, &card) < 0) return -EINVAL;
            continue;
        }
        if (!strcmp(id, "ppm")) {
            const char *text;
            long integer;
            double real;
            if (snd_config_get_string(n, &text) >= 0) {
                char *end;
                ppm = strtod(text, &end);
                if (end == text || *end) return -EINVAL;
            } else if (snd_config_get_integer(n, &integer) >= 0) {
                ppm = (double)integer;
            } else if (snd_config_get_real(n, &real) >= 0) {
                ppm = real;
            } else {
                return -EINVAL;
            }
            continue;
        }
        SNDERR("tutti_vcard: unknown field %s", id);
        return -EINVAL;
    }
    if (stream != SND_PCM_STREAM_PLAYBACK) {
        SNDERR("tutti_vcard: a playback device only");
        return -EINVAL;
    }
    if (ppm < -1000 || ppm > 1000 || strlen(card) == 0 || strlen(card) >= 96 || strchr(card, '/')) {
        SNDERR("tutti_vcard: NAME (no slash) and PPM within +-1000");
        return -EINVAL;
    }
    vcard_t *v = calloc(1, sizeof *v);
    if (!v) return -ENOMEM;
    snprintf(v->name, sizeof v->name, "%s", card);
    v->ppm = ppm;
    const char *dir = getenv("TUTTI_VCARD_DIR");
    if (dir) snprintf(v->dir, sizeof v->dir, "%s", dir);
    v->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (v->timer_fd < 0) {
        free(v);
        return -errno;
    }
    v->io.version = SND_PCM_IOPLUG_VERSION;
    v->io.name = "tutti virtual sound card";
    v->io.callback = &callbacks;
    v->io.private_data = v;
    v->io.poll_fd = v->timer_fd;
    v->io.poll_events = POLLIN;
    v->io.mmap_rw = 0;
    v->io.flags = SND_PCM_IOPLUG_FLAG_MONOTONIC;
    int err = snd_pcm_ioplug_create(&v->io, name, stream, mode);
    if (err < 0) {
        close(v->timer_fd);
        free(v);
        return err;
    }
    static const unsigned accesses[] = {SND_PCM_ACCESS_RW_INTERLEAVED};
    static const unsigned formats[] = {SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE};
    static const unsigned rates[] = {44100, 48000};
    if ((err = snd_pcm_ioplug_set_param_list(&v->io, SND_PCM_IOPLUG_HW_ACCESS, 1, accesses)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&v->io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&v->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 2)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&v->io, SND_PCM_IOPLUG_HW_RATE, 2, rates)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&v->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&v->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 1024)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&v->io, SND_PCM_IOPLUG_HW_BUFFER_BYTES, 128, 4 << 20)) < 0) {
        snd_pcm_ioplug_delete(&v->io);
        return err;
    }
    *pcmp = v->io.pcm;
    return 0;
}

SND_PCM_PLUGIN_SYMBOL(tutti_vcard);
