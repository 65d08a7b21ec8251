// CFLACLoader defines libFLAC's functions that TuttiCodecs calls and loads the library on
// their first call (flac-loader.c); there is nothing to import.
