#include <nettle/aes.h>
#include <nettle/gcm.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <nettle/chacha-poly1305.h>
#include <nettle/curve25519.h>
#include <gmp.h>
