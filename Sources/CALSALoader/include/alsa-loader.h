// CALSALoader defines libasound's functions that TuttiAudio calls and loads the library on
// their first call (alsa-loader.c); there is nothing to import.
