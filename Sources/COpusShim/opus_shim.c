#include "opus_shim.h"

int tutti_opus_set_bitrate(OpusEncoder *enc, int bitrate) { return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bitrate)); }
int tutti_opus_set_inband_fec(OpusEncoder *enc, int on) { return opus_encoder_ctl(enc, OPUS_SET_INBAND_FEC(on)); }
int tutti_opus_set_packet_loss_perc(OpusEncoder *enc, int percent) { return opus_encoder_ctl(enc, OPUS_SET_PACKET_LOSS_PERC(percent)); }
int tutti_opus_set_complexity(OpusEncoder *enc, int complexity) { return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(complexity)); }
int tutti_opus_set_signal_music(OpusEncoder *enc) { return opus_encoder_ctl(enc, OPUS_SET_SIGNAL(OPUS_SIGNAL_MUSIC)); }
int tutti_opus_get_lookahead(OpusEncoder *enc, int *samples) { return opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(samples)); }
int tutti_opus_decoder_reset(OpusDecoder *dec) { return opus_decoder_ctl(dec, OPUS_RESET_STATE); }
int tutti_opus_encoder_reset(OpusEncoder *enc) { return opus_encoder_ctl(enc, OPUS_RESET_STATE); }
