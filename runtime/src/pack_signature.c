/* pack_signature.c: the optional Ed25519 signature of a pack. It covers the
 * packaged KDP's exact bytes; the KDP pins every other descriptor file and
 * every code object by sha256 (pack_loader.c checks both at every open), so a
 * verified signature vouches for everything the loader trusts. libcrypto's
 * EVP raw public keys do the cryptography. */
#include <string.h>

#include <openssl/evp.h>

#include "internal.h"

INGOT_API ingot_status ingot_context_require_signature(ingot_context *ctx, const unsigned char *ed25519_public_key,
                                                       size_t key_len) {
  if (ctx == NULL) return INGOT_INVALID_ARGUMENT;
  ingot_context_clear_error(ctx);
  if (ed25519_public_key == NULL) {
    ingot_context_set_error(ctx, "ingot_context_require_signature: the key is NULL (allowed: a raw Ed25519 public "
                            "key of %d bytes)", INGOT_ED25519_KEY_BYTES);
    return INGOT_INVALID_ARGUMENT;
  }
  if (key_len != INGOT_ED25519_KEY_BYTES) {
    ingot_context_set_error(ctx, "ingot_context_require_signature: key_len = %zu (allowed: %d, a raw Ed25519 "
                            "public key)", key_len, INGOT_ED25519_KEY_BYTES);
    return INGOT_INVALID_ARGUMENT;
  }
  EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, ed25519_public_key, key_len);
  if (key == NULL) {
    ingot_context_set_error(ctx, "ingot_context_require_signature: libcrypto refuses the key as an Ed25519 public key");
    return INGOT_INVALID_ARGUMENT;
  }
  EVP_PKEY_free(key);
  /* A pack opened before this call was not checked: refuse rather than let the
   * context look as if every pack it holds were signed. */
  if (ctx->num_packs != 0) {
    ingot_context_set_error(ctx, "ingot_context_require_signature: %zu pack(s) already open on this context were "
                            "opened without a signature check (allowed: require the signature before opening any "
                            "pack)", ctx->num_packs);
    return INGOT_INVALID_ARGUMENT;
  }
  memcpy(ctx->signing_key, ed25519_public_key, INGOT_ED25519_KEY_BYTES);
  ctx->require_signature = 1;
  return INGOT_OK;
}

int ingot_ed25519_verify(const unsigned char key[INGOT_ED25519_KEY_BYTES], const unsigned char *sig, size_t sig_len,
                         const unsigned char *data, size_t size) {
  EVP_PKEY *pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key, INGOT_ED25519_KEY_BYTES);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int r = -1;
  if (pkey != NULL && md != NULL && EVP_DigestVerifyInit(md, NULL, NULL, NULL, pkey) == 1)
    r = EVP_DigestVerify(md, sig, sig_len, data, size) == 1;
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  return r;
}
