// libFLAC, loaded on first use: only a house that streams lossless FLAC decodes it, and a
// follower that plays Opus (most rooms) never maps it (libFLAC and libogg, 0.39 MB resident
// in a follower straight to ALSA, bench/NOTES.md). Each function TuttiCodecs' FLAC decoder
// calls is defined here with libFLAC's own prototype (the compiler checks it against
// <FLAC/stream_decoder.h>) and forwards to the library's function, found with dlsym on its
// first call (CLazyLibrary). When the library cannot be loaded, `FLAC__stream_decoder_new` returns NULL
// (the decoder then fails to open, and says so) and every other function fails as libFLAC
// reports it. Add a line here for each new call.
#include <FLAC/stream_decoder.h>
#include "lazy-library.h"

static tutti_lazy_library flac = { "libFLAC.so.12", NULL };
#define FORWARD(ret, fail, name, params, args) TUTTI_FORWARD(&flac, ret, fail, name, params, args)
#define FORWARD_VOID(name, params, args) TUTTI_FORWARD_VOID(&flac, name, params, args)

FORWARD(FLAC__StreamDecoder *, NULL, FLAC__stream_decoder_new, (void), ())
FORWARD_VOID(FLAC__stream_decoder_delete, (FLAC__StreamDecoder *decoder), (decoder))
FORWARD(FLAC__bool, 0, FLAC__stream_decoder_set_md5_checking, (FLAC__StreamDecoder *decoder, FLAC__bool value), (decoder, value))
FORWARD(FLAC__StreamDecoderInitStatus, FLAC__STREAM_DECODER_INIT_STATUS_MEMORY_ALLOCATION_ERROR, FLAC__stream_decoder_init_stream,
        (FLAC__StreamDecoder *decoder, FLAC__StreamDecoderReadCallback read_callback, FLAC__StreamDecoderSeekCallback seek_callback,
         FLAC__StreamDecoderTellCallback tell_callback, FLAC__StreamDecoderLengthCallback length_callback,
         FLAC__StreamDecoderEofCallback eof_callback, FLAC__StreamDecoderWriteCallback write_callback,
         FLAC__StreamDecoderMetadataCallback metadata_callback, FLAC__StreamDecoderErrorCallback error_callback, void *client_data),
        (decoder, read_callback, seek_callback, tell_callback, length_callback, eof_callback, write_callback, metadata_callback,
         error_callback, client_data))
FORWARD(FLAC__bool, 0, FLAC__stream_decoder_finish, (FLAC__StreamDecoder *decoder), (decoder))
FORWARD(FLAC__bool, 0, FLAC__stream_decoder_flush, (FLAC__StreamDecoder *decoder), (decoder))
FORWARD(FLAC__bool, 0, FLAC__stream_decoder_process_single, (FLAC__StreamDecoder *decoder), (decoder))
