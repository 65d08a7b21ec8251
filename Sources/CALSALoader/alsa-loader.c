// libasound, loaded on first use: a follower that plays through PulseAudio (most rooms)
// never maps it (0.28 MB resident, bench/NOTES.md). Each function TuttiAudio's ALSA output
// calls is defined here with libasound's own prototype (the compiler checks it against
// <alsa/asoundlib.h>) and forwards to the library's function, found with dlsym on its first
// call (CLazyLibrary). When the library cannot be loaded, every function fails as ALSA reports a missing
// device or call (-ENOSYS; `snd_strerror` says which library is missing): the ALSA output
// then fails to open with that message, and nothing else calls it. Generated from the
// headers' prototypes; add a line here for each new call.
#include <alsa/asoundlib.h>
#include "lazy-library.h"
#include <errno.h>

static tutti_lazy_library alsa = { "libasound.so.2", NULL };
#define FORWARD(ret, fail, name, params, args) TUTTI_FORWARD(&alsa, ret, fail, name, params, args)
#define FORWARD_VOID(name, params, args) TUTTI_FORWARD_VOID(&alsa, name, params, args)

FORWARD(snd_pcm_sframes_t, -ENOSYS, snd_pcm_avail_update, (snd_pcm_t *pcm), (pcm))
FORWARD(int, -ENOSYS, snd_pcm_close, (snd_pcm_t *pcm), (pcm))
FORWARD(snd_pcm_sframes_t, -ENOSYS, snd_pcm_forward, (snd_pcm_t *pcm, snd_pcm_uframes_t frames), (pcm, frames))
FORWARD(int, -ENOSYS, snd_pcm_hw_params, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_any, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params))
FORWARD_VOID(snd_pcm_hw_params_free, (snd_pcm_hw_params_t *obj), (obj))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_get_buffer_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (params, val))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_get_period_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir), (params, frames, dir))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_malloc, (snd_pcm_hw_params_t **ptr), (ptr))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_access, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access), (pcm, params, _access))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_buffer_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_channels, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_format, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_period_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir), (pcm, params, val, dir))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_rate, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val, int dir), (pcm, params, val, dir))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_set_rate_resample, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_hw_params_test_format, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_open, (snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode), (pcm, name, stream, mode))
FORWARD(int, -ENOSYS, snd_pcm_poll_descriptors, (snd_pcm_t *pcm, struct pollfd *pfds, unsigned int space), (pcm, pfds, space))
FORWARD(int, -ENOSYS, snd_pcm_poll_descriptors_count, (snd_pcm_t *pcm), (pcm))
FORWARD(int, -ENOSYS, snd_pcm_poll_descriptors_revents, (snd_pcm_t *pcm, struct pollfd *pfds, unsigned int nfds, unsigned short *revents), (pcm, pfds, nfds, revents))
FORWARD(int, -ENOSYS, snd_pcm_prepare, (snd_pcm_t *pcm), (pcm))
FORWARD(int, -ENOSYS, snd_pcm_recover, (snd_pcm_t *pcm, int err, int silent), (pcm, err, silent))
FORWARD(int, -ENOSYS, snd_pcm_status, (snd_pcm_t *pcm, snd_pcm_status_t *status), (pcm, status))
FORWARD_VOID(snd_pcm_status_free, (snd_pcm_status_t *obj), (obj))
FORWARD(snd_pcm_sframes_t, -ENOSYS, snd_pcm_status_get_delay, (const snd_pcm_status_t *obj), (obj))
FORWARD(snd_pcm_uframes_t, 0, snd_pcm_status_get_avail, (const snd_pcm_status_t *obj), (obj))
FORWARD_VOID(snd_pcm_status_get_htstamp, (const snd_pcm_status_t *obj, snd_htimestamp_t *ptr), (obj, ptr))
FORWARD(snd_pcm_state_t, SND_PCM_STATE_DISCONNECTED, snd_pcm_status_get_state, (const snd_pcm_status_t *obj), (obj))
FORWARD(int, -ENOSYS, snd_pcm_status_malloc, (snd_pcm_status_t **ptr), (ptr))
FORWARD(int, -ENOSYS, snd_pcm_sw_params, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_current, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
FORWARD_VOID(snd_pcm_sw_params_free, (snd_pcm_sw_params_t *obj), (obj))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_get_boundary, (const snd_pcm_sw_params_t *params, snd_pcm_uframes_t *val), (params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_malloc, (snd_pcm_sw_params_t **ptr), (ptr))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_avail_min, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_silence_size, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_silence_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_start_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_stop_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_tstamp_mode, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_tstamp_t val), (pcm, params, val))
FORWARD(int, -ENOSYS, snd_pcm_sw_params_set_tstamp_type, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_tstamp_type_t val), (pcm, params, val))
FORWARD(snd_pcm_sframes_t, -ENOSYS, snd_pcm_writei, (snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size), (pcm, buffer, size))
FORWARD(const char *, "libasound.so.2 could not be loaded (install libasound2)", snd_strerror, (int errnum), (errnum))
