// FFmpeg's demuxers (libavformat), decoders (libavcodec), resampler (libswresample), image
// scaler (libswscale: cover art for Sendspin's artwork role) and
// utilities (libavutil, its real DFTs included), for TuttiMedia alone. What Swift cannot import (function-like
// macros, compound literals) is spelt out below as static inline functions.
#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/opt.h>
#include <libavutil/tx.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

static inline int tutti_averror_eof(void) { return AVERROR_EOF; }
static inline int tutti_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int tutti_averror_exit(void) { return AVERROR_EXIT; }
static inline int tutti_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int tutti_averror_eio(void) { return AVERROR(EIO); }
static inline int64_t tutti_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int tutti_avseek_size(void) { return AVSEEK_SIZE; }

/// A channel layout of `channels` channels in FFmpeg's default order (stereo for 2).
static inline void tutti_default_layout(AVChannelLayout *layout, int channels) {
    av_channel_layout_default(layout, channels);
}
