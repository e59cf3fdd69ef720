/* text_pin.c — a prepared text corpus compared with the pinned manifest (textprep.h).
 *
 * The manifest (data/text-manifest.txt, written by tools/scripts/pin-text.sh) holds "key = value"
 * lines: domains, cap_bytes, <domain>.packages = "pkg version, pkg version" and
 * sha256.<file> = <hex> for every file of the corpus the docs were measured on. A domain of
 * the corpus is
 *   same      when its package versions and the SHA-256 of its files (its three parts and the
 *             copyright files of its packages) are the manifest's;
 *   drifted   otherwise: the packages whose version differs ("pkg pinned -> here"), and the
 *             files whose digest differs, are named;
 *   unpinned  when the manifest does not know the domain.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "text.h"
#include "textprep.h"
#include "util.h"

/* The version of package pkg in a "pkg version, pkg version" list into ver ("" when the list
 * does not hold pkg); returns 1 when found. */
static int pkg_version(const char *list, const char *pkg, char *ver, size_t cap)
{
    const size_t k = strlen(pkg);
    ver[0] = 0;
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',') p++;
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > k && strncmp(p, pkg, k) == 0 && p[k] == ' ') {
            size_t vn = n - k - 1;
            while (vn && p[k + 1 + vn - 1] == ' ') vn--;
            snprintf(ver, cap, "%.*s", (int)vn, p + k + 1);
            return 1;
        }
        p = end;
    }
    return 0;
}

/* Append "s" to buf (cap bytes) with ", " before it when buf is not empty. */
static void add_item(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap) return;
    snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", s);
}

/* Every package of list a that b lacks or holds at another version: "pkg va -> vb" items
 * (vb "(none)" when absent) appended to out; then the packages only b has ("pkg (none) -> vb"). */
static void pkg_diff(const char *pinned, const char *here, char *out, size_t cap)
{
    const char *lists[2] = {pinned, here};
    for (int side = 0; side < 2; side++) {
        for (const char *p = lists[side]; p && *p;) {
            while (*p == ' ' || *p == ',') p++;
            if (!*p) break;
            const char *sp = strchr(p, ' '), *end = strchr(p, ',');
            if (!sp || (end && sp > end)) { /* a name without a version: skip it */
                p = end;
                continue;
            }
            char pkg[128], va[96], vb[96], item[400];
            snprintf(pkg, sizeof pkg, "%.*s", (int)(sp - p), p);
            pkg_version(lists[side], pkg, va, sizeof va);
            int other = pkg_version(lists[1 - side], pkg, vb, sizeof vb);
            if (side == 0 && (!other || strcmp(va, vb) != 0)) {
                snprintf(item, sizeof item, "%s %s -> %s", pkg, va, other ? vb : "(none)");
                add_item(out, cap, item);
            } else if (side == 1 && !other) {
                snprintf(item, sizeof item, "%s (none) -> %s", pkg, va);
                add_item(out, cap, item);
            }
            p = end;
        }
    }
}

/* Does file (a name of SHA256SUMS) belong to domain d with packages list pk? Its parts
 * "<d>.train|valid|test" and the copyright files "copyright/<pkg>" of its packages. */
static int file_of_domain(const char *file, const char *d, const char *pk)
{
    const size_t k = strlen(d);
    if (strncmp(file, d, k) == 0 && file[k] == '.' && !strchr(file + k + 1, '.') &&
        (!strcmp(file + k + 1, "train") || !strcmp(file + k + 1, "valid") ||
         !strcmp(file + k + 1, "test")))
        return 1;
    char v[96];
    return strncmp(file, "copyright/", 10) == 0 && pkg_version(pk, file + 10, v, sizeof v);
}

mcl_status mcl_text_pin_compare(const char *dir, const char *manifest, mcl_text_drift **out,
                                int *n_out, char *err, size_t len)
{
    *out = NULL;
    *n_out = 0;
    char *txt = NULL, e2[768] = "";
    mcl_status st = mcl_read_text_file(manifest, (size_t)1 << 20, &txt, e2, sizeof e2);
    if (st != MCL_OK) return mcl_errbuf(err, len, st, "the pinned manifest: %s", e2);
    mcl_kv_list man = {0};
    st = mcl_kv_parse(txt, manifest, mcl_kv_list_add, &man, e2, sizeof e2);
    free(txt);
    const char *kind = st == MCL_OK ? mcl_kv_list_get(&man, "kind") : NULL;
    if (st == MCL_OK && (!kind || strcmp(kind, "text-manifest") != 0))
        st = mcl_errbuf(e2, sizeof e2, MCL_ERR_FORMAT, "%s: not a text manifest (no 'kind = text-manifest')",
                        manifest);
    if (st != MCL_OK) {
        mcl_kv_list_free(&man);
        return mcl_errbuf(err, len, st, "%s", e2);
    }
    mcl_text_corpus *c = NULL;
    st = mcl_text_open(dir, 0, &c, e2, sizeof e2);
    if (st != MCL_OK) {
        mcl_kv_list_free(&man);
        return mcl_errbuf(err, len, st, "%s", e2);
    }
    mcl_text_check *ch = NULL;
    int nch = 0;
    (void)mcl_text_verify(dir, &ch, &nch, e2, sizeof e2); /* damage is data info's business */
    const int nd = mcl_text_domains(c);
    mcl_text_drift *dr = calloc((size_t)(nd ? nd : 1), sizeof *dr);
    if (!dr) {
        free(ch);
        mcl_text_close(c);
        mcl_kv_list_free(&man);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    for (int d = 0; d < nd; d++) {
        mcl_text_drift *x = &dr[d];
        const char *name = mcl_text_domain_name(c, d), *here = mcl_text_domain_source(c, d);
        snprintf(x->domain, sizeof x->domain, "%s", name);
        char key[160];
        snprintf(key, sizeof key, "%s.packages", name);
        const char *pinned = mcl_kv_list_get(&man, key);
        if (!pinned) {
            x->state = MCL_TEXT_PIN_UNPINNED;
            continue;
        }
        pkg_diff(pinned, here, x->packages, sizeof x->packages);
        /* the domain's files, as they are now, against the manifest's digests */
        for (int i = 0; i < nch; i++) {
            if (!file_of_domain(ch[i].file, name, here) && !file_of_domain(ch[i].file, name, pinned))
                continue;
            snprintf(key, sizeof key, "sha256.%s", ch[i].file);
            const char *want = mcl_kv_list_get(&man, key);
            if (!want || strcmp(want, ch[i].got) != 0) add_item(x->files, sizeof x->files, ch[i].file);
        }
        /* a part the manifest pins but the corpus's SHA256SUMS does not list */
        static const char *const parts[3] = {"train", "valid", "test"};
        for (int p = 0; p < 3; p++) {
            char fn[96];
            int listed = 0;
            snprintf(fn, sizeof fn, "%s.%s", name, parts[p]);
            for (int i = 0; i < nch; i++) listed |= strcmp(ch[i].file, fn) == 0;
            if (!listed) add_item(x->files, sizeof x->files, fn);
        }
        x->state = x->packages[0] || x->files[0] ? MCL_TEXT_PIN_DRIFTED : MCL_TEXT_PIN_SAME;
    }
    free(ch);
    mcl_text_close(c);
    mcl_kv_list_free(&man);
    *out = dr;
    *n_out = nd;
    return MCL_OK;
}

const char *mcl_text_pin_state_name(int state)
{
    switch (state) {
    case MCL_TEXT_PIN_SAME: return "pinned";
    case MCL_TEXT_PIN_DRIFTED: return "DRIFTED";
    default: return "unpinned";
    }
}
