/* families.c — the model families built into the library: the one place that names them
 * (`metacl train FAMILY`, checkpoints' model kinds). A new family adds its table here. */
#include <string.h>

#include "acl_train.h"
#include "lm_train.h"
#include "oct_train.h"
#include "smn_train.h"
#include "train.h"

static const mcl_family *const families[] = {&mcl_acl_family, &mcl_oct_family, &mcl_smn_family, &mcl_lm_family, NULL};

const mcl_family *const *mcl_families(void) { return families; }

const mcl_family *mcl_family_find(const char *kind)
{
    for (int i = 0; kind && families[i]; i++)
        if (strcmp(families[i]->kind, kind) == 0) return families[i];
    return NULL;
}
