// tutti_lazy_symbol (include/lazy-library.h): dlopen on the first call that needs the
// library, dlsym on each function's first call; both kept with release stores, so a thread
// that reads a handle or a function also sees what the loader set up behind it. Two threads
// that race on a first call both load (dlopen counts references: the same handle) and both
// find the same function.
#include "lazy-library.h"
#include <dlfcn.h>
#include <stddef.h>

void *tutti_lazy_symbol(tutti_lazy_library *library, void **slot, const char *name) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f) return f;
    void *h = __atomic_load_n(&library->handle, __ATOMIC_ACQUIRE);
    if (!h) {
        h = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) return NULL;
        __atomic_store_n(&library->handle, h, __ATOMIC_RELEASE);
    }
    f = dlsym(h, name);
    if (f) __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}
