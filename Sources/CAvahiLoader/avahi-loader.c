// libavahi-client (and libavahi-common, which it loads), loaded on first use: only a machine
// that announces or looks for a service over mDNS needs them, and a follower told its
// coordinator (`--coordinator`) never maps them, nor what they load with them (libdbus,
// libsystemd and its compressors, libgcrypt: 1 MB resident in a follower, bench/NOTES.md).
// Each function TuttiDiscovery calls is defined here with Avahi's own prototype (the
// compiler checks it against the headers) and forwards to the library's function, found
// with dlsym on its first call (CLazyLibrary). When the library cannot be loaded, every function fails as
// Avahi reports a missing daemon (`avahi_client_new` with AVAHI_ERR_NOT_SUPPORTED, whose
// `avahi_strerror` names the missing library; a NULL object or an error number elsewhere).
// Add a line here for each new call.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/simple-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include "lazy-library.h"
#include <stddef.h>

// dlsym on the client library's handle also finds libavahi-common's functions: it searches
// the library and what it loaded with it.
static tutti_lazy_library avahi = { "libavahi-client.so.3", NULL };
#define FORWARD(ret, fail, name, params, args) TUTTI_FORWARD(&avahi, ret, fail, name, params, args)
#define FORWARD_VOID(name, params, args) TUTTI_FORWARD_VOID(&avahi, name, params, args)

__attribute__((visibility("hidden")))
AvahiClient *avahi_client_new(const AvahiPoll *poll_api, AvahiClientFlags flags, AvahiClientCallback callback, void *userdata,
                              int *error) {
    static void *slot;
    AvahiClient *(*f)(const AvahiPoll *, AvahiClientFlags, AvahiClientCallback, void *, int *) =
        (AvahiClient * (*)(const AvahiPoll *, AvahiClientFlags, AvahiClientCallback, void *, int *)) tutti_lazy_symbol(&avahi, &slot, "avahi_client_new");
    if (!f) {
        if (error) *error = AVAHI_ERR_NOT_SUPPORTED;
        return NULL;
    }
    return f(poll_api, flags, callback, userdata, error);
}

FORWARD(const char *, "libavahi-client.so.3 could not be loaded (install libavahi-client3)", avahi_strerror, (int error), (error))
FORWARD(char *, NULL, avahi_address_snprint, (char *ret_s, size_t length, const AvahiAddress *a), (ret_s, length, a))
FORWARD(char *, NULL, avahi_alternative_service_name, (const char *s), (s))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_client_errno, (AvahiClient *client), (client))
FORWARD_VOID(avahi_client_free, (AvahiClient *client), (client))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_entry_group_add_service_strlst,
        (AvahiEntryGroup *group, AvahiIfIndex interface, AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
         const char *type, const char *domain, const char *host, uint16_t port, AvahiStringList *txt),
        (group, interface, protocol, flags, name, type, domain, host, port, txt))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_entry_group_commit, (AvahiEntryGroup *group), (group))
FORWARD(AvahiClient *, NULL, avahi_entry_group_get_client, (AvahiEntryGroup *group), (group))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_entry_group_is_empty, (AvahiEntryGroup *group), (group))
FORWARD(AvahiEntryGroup *, NULL, avahi_entry_group_new, (AvahiClient *c, AvahiEntryGroupCallback callback, void *userdata),
        (c, callback, userdata))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_entry_group_reset, (AvahiEntryGroup *group), (group))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_entry_group_update_service_txt_strlst,
        (AvahiEntryGroup *g, AvahiIfIndex interface, AvahiProtocol protocol, AvahiPublishFlags flags, const char *name,
         const char *type, const char *domain, AvahiStringList *strlst),
        (g, interface, protocol, flags, name, type, domain, strlst))
FORWARD_VOID(avahi_free, (void *p), (p))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_service_browser_free, (AvahiServiceBrowser *browser), (browser))
FORWARD(AvahiClient *, NULL, avahi_service_browser_get_client, (AvahiServiceBrowser *browser), (browser))
FORWARD(AvahiServiceBrowser *, NULL, avahi_service_browser_new,
        (AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol, const char *type, const char *domain,
         AvahiLookupFlags flags, AvahiServiceBrowserCallback callback, void *userdata),
        (client, interface, protocol, type, domain, flags, callback, userdata))
FORWARD(int, AVAHI_ERR_NOT_SUPPORTED, avahi_service_resolver_free, (AvahiServiceResolver *r), (r))
FORWARD(AvahiServiceResolver *, NULL, avahi_service_resolver_new,
        (AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol, const char *name, const char *type,
         const char *domain, AvahiProtocol aprotocol, AvahiLookupFlags flags, AvahiServiceResolverCallback callback,
         void *userdata),
        (client, interface, protocol, name, type, domain, aprotocol, flags, callback, userdata))
FORWARD_VOID(avahi_simple_poll_free, (AvahiSimplePoll *s), (s))
FORWARD(const AvahiPoll *, NULL, avahi_simple_poll_get, (AvahiSimplePoll *s), (s))
FORWARD(int, -1, avahi_simple_poll_iterate, (AvahiSimplePoll *s, int sleep_time), (s, sleep_time))
FORWARD(AvahiSimplePoll *, NULL, avahi_simple_poll_new, (void), ())
FORWARD(AvahiStringList *, NULL, avahi_string_list_add, (AvahiStringList *l, const char *text), (l, text))
FORWARD_VOID(avahi_string_list_free, (AvahiStringList *l), (l))
FORWARD(AvahiStringList *, NULL, avahi_string_list_get_next, (AvahiStringList *l), (l))
FORWARD(size_t, 0, avahi_string_list_get_size, (AvahiStringList *l), (l))
FORWARD(uint8_t *, NULL, avahi_string_list_get_text, (AvahiStringList *l), (l))
FORWARD_VOID(avahi_threaded_poll_free, (AvahiThreadedPoll *p), (p))
FORWARD(const AvahiPoll *, NULL, avahi_threaded_poll_get, (AvahiThreadedPoll *p), (p))
FORWARD_VOID(avahi_threaded_poll_lock, (AvahiThreadedPoll *p), (p))
FORWARD(AvahiThreadedPoll *, NULL, avahi_threaded_poll_new, (void), ())
FORWARD(int, -1, avahi_threaded_poll_start, (AvahiThreadedPoll *p), (p))
FORWARD(int, -1, avahi_threaded_poll_stop, (AvahiThreadedPoll *p), (p))
FORWARD_VOID(avahi_threaded_poll_unlock, (AvahiThreadedPoll *p), (p))
