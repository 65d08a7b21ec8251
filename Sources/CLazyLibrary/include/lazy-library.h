// A C library loaded on its first use, for the loaders (CALSALoader, CFLACLoader,
// CAvahiLoader): each defines the library's functions that tutti calls, with the library's
// own prototypes (the compiler checks them against its headers), and each definition
// forwards to the library's function, found with dlsym on its first call. A program that
// never calls one never maps the library, nor what the library loads with it.
//
//     static tutti_lazy_library flac = { "libFLAC.so.12" };
//     TUTTI_FORWARD(&flac, FLAC__bool, 0, FLAC__stream_decoder_finish, (FLAC__StreamDecoder *d), (d))
//
// When the library cannot be loaded (or lacks the function), a forwarded call returns
// `fail`, the value by which the library itself reports that failure.
#ifndef TUTTI_LAZY_LIBRARY_H
#define TUTTI_LAZY_LIBRARY_H

typedef struct {
    const char *soname;  // what dlopen loads, with its major version: "libasound.so.2"
    void *handle;        // set on the first load that succeeds
} tutti_lazy_library;

// The function `name` of `library`, kept in `slot` once found; NULL when the library cannot
// be loaded or lacks it (a later call tries again). Safe from any thread.
__attribute__((visibility("hidden"))) void *tutti_lazy_symbol(tutti_lazy_library *library, void **slot, const char *name);

// The definitions are hidden: a binary that exports its symbols (the whole `tutti`) must not
// offer them in place of the library's own to the library, its plugins or anything else that
// loads it.
#define TUTTI_FORWARD(library, ret, fail, name, params, args)                           \
    __attribute__((visibility("hidden"))) ret name params {                             \
        static void *slot;                                                               \
        ret (*f) params = (ret (*) params) tutti_lazy_symbol(library, &slot, #name);     \
        if (!f) return fail;                                                             \
        return f args;                                                                   \
    }
#define TUTTI_FORWARD_VOID(library, name, params, args)                                 \
    __attribute__((visibility("hidden"))) void name params {                            \
        static void *slot;                                                               \
        void (*f) params = (void (*) params) tutti_lazy_symbol(library, &slot, #name);   \
        if (f) f args;                                                                   \
    }

#endif
