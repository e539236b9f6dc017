// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libcurl and libcrypto, loaded on first use (s3_libs.h). */
#include "s3_libs.h"

CURL_SYMS(LAZYLIB_POINTER)
CRYPTO_SYMS(LAZYLIB_POINTER)

static const struct lazylib_sym curl_syms[] = { CURL_SYMS(LAZYLIB_SYM) {} };
static const struct lazylib_sym crypto_syms[] = { CRYPTO_SYMS(LAZYLIB_SYM) {} };

struct lazylib lib_curl = { "libcurl.so.4", "libcurl4", "S3 access", curl_syms };
/* OpenSSL 3's soname; its header says which major version it is */
_Static_assert(OPENSSL_VERSION_MAJOR == 3, "libcrypto.so.3 is OpenSSL 3's");
struct lazylib lib_crypto = { "libcrypto.so.3", "libssl3", "SHA-256 and MD5", crypto_syms };
