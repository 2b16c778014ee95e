/* The YAML and CLI spellings of the config enums: one table each, used by the loaders to
 * parse and by every report to print. Order matches the enums in config.h. */
#include "config/config.h"

const char *const config_strategy_names[2] = {"ulysses", "basp"};
const char *const config_recompute_names[2] = {"none", "full"};
const char *const config_a2a_names[3] = {"direct", "pairwise", "hierarchical"};
const char *const config_basp_uneven_names[3] = {"error", "unequal", "extra-step"};
const char *const config_fabric_names[3] = {"nvswitch", "nvlink-mesh", "pcie"};
const char *const config_topology_names[3] = {"single-switch", "fat-tree", "rail-optimized"};
const char *const config_gpu_arch_names[2] = {"ampere", "hopper"};
const char *const config_attn_kernel_names[CONFIG_ATTN_KERNELS] = {"flash-attn-2", "flash-attn-3", "cudnn"};
const char *const config_impl_names[2] = {"hf", "megatron"};
