// test-cxx-headers.cc — every installed header (pkginclude_HEADERS) compiles as C++ and
// declares its functions with C linkage: the program takes the address of one function of
// each header, so a header without its extern "C" block leaves a C++-mangled name that does
// not link. Built and run by make check when configure found a C++ compiler, and against
// the installed headers by make installcheck.
#include <metacl/metacl.h>
#include <metacl/status.h>
#include <metacl/tensor.h>
#include <metacl/ops.h>
#include <metacl/keys.h>
#include <metacl/rng.h>
#include <metacl/abi.h>
#include <metacl/optim.h>
#include <metacl/params.h>
#include <metacl/checkpoint.h>
#include <metacl/safetensors.h>
#include <metacl/dataset.h>
#include <metacl/sampler.h>
#include <metacl/augment.h>
#include <metacl/text.h>
#include <metacl/wcst.h>
#include <metacl/acl.h>
#include <metacl/acl_interop.h>
#include <metacl/metrics.h>
#include <metacl/acl_eval.h>
#include <metacl/baseline.h>
#include <metacl/acl_train.h>
#include <metacl/train.h>
#include <metacl/learner.h>
#include <metacl/learner_api.h>
#include <metacl/protocols.h>
#include <metacl/conv4.h>
#include <metacl/conv8.h>
#include <metacl/oct.h>
#include <metacl/oct_train.h>
#include <metacl/dist.h>
#include <metacl/metanet.h>
#include <metacl/smn.h>
#include <metacl/smn_train.h>
#include <metacl/smn_agent.h>
#include <metacl/lm.h>
#include <metacl/lm_train.h>
#include <metacl/lm_text.h>

#include <cstdio>
#include <cstring>

int main()
{
    const void *fns[] = {
        reinterpret_cast<const void *>(&mcl_status_str),       // status.h
        reinterpret_cast<const void *>(&mcl_tensor_new),       // tensor.h
        reinterpret_cast<const void *>(&mcl_matmul),           // ops.h
        reinterpret_cast<const void *>(&mcl_keys_find),        // keys.h
        reinterpret_cast<const void *>(&mcl_rng_init),         // rng.h
        reinterpret_cast<const void *>(&mcl_abi_size),         // abi.h
        reinterpret_cast<const void *>(&mcl_optim_create),     // optim.h
        reinterpret_cast<const void *>(&mcl_params_create),    // params.h
        reinterpret_cast<const void *>(&mcl_ckpt_save),        // checkpoint.h
        reinterpret_cast<const void *>(&mcl_st_parse),         // safetensors.h
        reinterpret_cast<const void *>(&mcl_dataset_load),     // dataset.h
        reinterpret_cast<const void *>(&mcl_episode_create),   // sampler.h
        reinterpret_cast<const void *>(&mcl_aug_apply),        // augment.h
        reinterpret_cast<const void *>(&mcl_wcst_create),      // wcst.h
        reinterpret_cast<const void *>(&mcl_text_open),        // text.h
        reinterpret_cast<const void *>(&mcl_acl_open),         // acl.h
        reinterpret_cast<const void *>(&mcl_acl_import_safetensors), // acl_interop.h
        reinterpret_cast<const void *>(&mcl_cl_result_free),   // metrics.h
        reinterpret_cast<const void *>(&mcl_acl_learner_open), // acl_eval.h
        reinterpret_cast<const void *>(&mcl_baseline_config_default), // baseline.h
        reinterpret_cast<const void *>(&mcl_acl_init_from),    // acl_train.h (mcl_acl_family is data)
        reinterpret_cast<const void *>(&mcl_train_run),        // train.h
        reinterpret_cast<const void *>(&mcl_learner_free),     // learner.h
        reinterpret_cast<const void *>(&mcl_learner_open_ckpt), // learner_api.h
        reinterpret_cast<const void *>(&mcl_lm_sample),        // lm_text.h
        reinterpret_cast<const void *>(&mcl_smn_model_open),   // smn_agent.h
        reinterpret_cast<const void *>(&mcl_eval_seq),         // protocols.h
        reinterpret_cast<const void *>(&mcl_conv4_create),     // conv4.h
        reinterpret_cast<const void *>(&mcl_conv8_create),     // conv8.h
        reinterpret_cast<const void *>(&mcl_oct_create),       // oct.h
        reinterpret_cast<const void *>(&mcl_oct_report_load),  // oct_train.h
        reinterpret_cast<const void *>(&mcl_dist_sum_f32),     // dist.h
        reinterpret_cast<const void *>(&mcl_metanet_create),   // metanet.h
        reinterpret_cast<const void *>(&mcl_smn_create),       // smn.h
        reinterpret_cast<const void *>(&mcl_smn_online_run),   // smn_train.h
        reinterpret_cast<const void *>(&mcl_lm_create),        // lm.h
        reinterpret_cast<const void *>(&mcl_lm_evaluate),      // lm_train.h
    };
    int n = 0;
    for (const void *f : fns) n += f != nullptr;
    // one real call through the C API from C++
    std::printf("test-cxx-headers: %d functions of %d headers link; %s; version %s\n", n,
                (int)(sizeof fns / sizeof fns[0]), mcl_status_str(MCL_OK), METACL_VERSION_STRING);
    return n == (int)(sizeof fns / sizeof fns[0]) && std::strlen(mcl_status_str(MCL_OK)) > 0 ? 0 : 1;
}
