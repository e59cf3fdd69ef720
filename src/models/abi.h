/* abi.h — the layout of the structs that language bindings mirror field by field (python/metacl
 * declares them with ctypes), so that a binding can check its copy against the library it
 * opened instead of reading past a field the library added. */
#ifndef MCL_ABI_H
#define MCL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sizeof the struct named `type` (its typedef name, e.g. "mcl_splitx_cfg"); -1 for a struct the
 * table does not describe or a NULL name. */
int64_t mcl_abi_size(const char *type);
/* offsetof(type, field); -1 for an unknown struct or field (or a NULL argument). */
int64_t mcl_abi_offset(const char *type, const char *field);
/* The k-th struct the table describes (k = 0, 1, ...; NULL past the last): what a binding should
 * mirror exactly if it mirrors it at all. */
const char *mcl_abi_type(int k);

#ifdef __cplusplus
}
#endif
#endif
