#ifndef TUTTI_OPUS_SHIM_H
#define TUTTI_OPUS_SHIM_H
#include <opus/opus.h>

/// Non-variadic wrappers around opus_encoder_ctl / opus_decoder_ctl.
int tutti_opus_set_bitrate(OpusEncoder *enc, int bitrate);
int tutti_opus_set_inband_fec(OpusEncoder *enc, int on);
int tutti_opus_set_packet_loss_perc(OpusEncoder *enc, int percent);
int tutti_opus_set_complexity(OpusEncoder *enc, int complexity);
int tutti_opus_set_signal_music(OpusEncoder *enc);
int tutti_opus_get_lookahead(OpusEncoder *enc, int *samples);
int tutti_opus_decoder_reset(OpusDecoder *dec);
int tutti_opus_encoder_reset(OpusEncoder *enc);
#endif
