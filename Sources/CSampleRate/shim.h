#include <samplerate.h>
