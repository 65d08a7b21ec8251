// CAvahiLoader defines libavahi-client's and libavahi-common's functions that TuttiDiscovery
// calls and loads the library on their first call (avahi-loader.c); there is nothing to import.
