/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libcurl and OpenSSL's libcrypto, loaded on first use (include/lazylib.h): only the S3
 * client, the uploader and the daemon's spool need them, and linked they cost every
 * `ptbpf decode` their start-up. Call them as sym_NAME after lazylib_load() of their
 * library has returned 0: s3_client__new() loads both, the digests load libcrypto.
 */
#ifndef PTBPF_S3_LIBS_H
#define PTBPF_S3_LIBS_H

#include <curl/curl.h>
#include <openssl/evp.h>

#include "lazylib.h"

#define CURL_SYMS(X)                                                                               \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset)             \
	X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_perform) X(curl_easy_strerror)       \
	X(curl_slist_append) X(curl_slist_free_all) X(curl_multi_init) X(curl_multi_cleanup)      \
	X(curl_multi_setopt) X(curl_multi_add_handle) X(curl_multi_remove_handle)                  \
	X(curl_multi_perform) X(curl_multi_poll) X(curl_multi_info_read)
#define CRYPTO_SYMS(X)                                                                             \
	X(EVP_Digest) X(EVP_DigestInit_ex) X(EVP_DigestUpdate) X(EVP_DigestFinal_ex)               \
	X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_md5) X(EVP_sha256)

CURL_SYMS(LAZYLIB_PROTOTYPE)
CRYPTO_SYMS(LAZYLIB_PROTOTYPE)
extern struct lazylib lib_curl, lib_crypto;

#endif /* PTBPF_S3_LIBS_H */
