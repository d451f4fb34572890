// SPDX-License-Identifier: Apache-2.0
// The gradient tensors a data-parallel training step all-reduces, for the
// gradient-replay scenario (docs/design/data-plane.md#scenarios), and their fusion into
// buckets as PyTorch DDP and Horovod do.
//
// Presets are computed from the architectures (layer shapes), not typed-in
// tables, so the totals can be checked against the published parameter
// counts:
//   resnet50   torchvision ResNet-50: 25,557,032 parameters in 161 tensors
//   vgg16      torchvision VGG-16:   138,357,544 parameters in 32 tensors
//   bert-base  BERT-Base uncased (with pooler): 109,482,240 in 199 tensors
// or "sizes:1M,4M,..." for explicit tensor sizes in bytes of float32
// gradients.
//
// Tensors are listed in gradient order: the reverse of the forward order,
// because backpropagation produces the last layer's gradient first and
// DDP/Horovod start reducing as soon as a bucket is full.
//
// Everything here is pure computation, free of MPI and thread-compatible.
#ifndef COLLBENCH_ENGINE_SPEC_MODELS_H_
#define COLLBENCH_ENGINE_SPEC_MODELS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

struct GradientTensor {
  std::string name;  // the framework's parameter name, e.g. "fc.weight"
  uint64_t elements = 0;
};

struct ModelGradients {
  std::string name;                     // "resnet50", or "sizes" for a list
  std::vector<GradientTensor> tensors;  // gradient order: last layer first
  // Nominal forward + backward time of one step on one GPU, in seconds.
  // ASSUMPTION, used only for the scaling-efficiency model of
  // gradient-replay; --compute-time overrides it. The preset values are
  // rounded figures for float32 training at batch 32 on a V100-class GPU
  // (ResNet-50 ~330 images/s, VGG-16 ~220 images/s, BERT-Base at sequence
  // length 128 ~190 sequences/s); a "sizes:" list has none (0: the
  // efficiency then compares pure communication times).
  double nominal_compute_s = 0;
};

// The preset names LoadModel accepts besides "sizes:...".
std::vector<std::string> ModelPresetNames();

// Resolves a `--model` value: a preset name or "sizes:" followed by a
// comma-separated list of positive byte sizes (K/M/G suffixes, powers of
// 1024), each a multiple of 4 (float32 elements). InvalidArgument naming
// --model and listing the valid values otherwise.
absl::StatusOr<ModelGradients> LoadModel(absl::string_view text);

// Sum of the tensors' element counts (the model's parameter count).
uint64_t ParameterCount(const ModelGradients& model);

// Fuses tensors of the given byte sizes, taken in order, into buckets the
// way DDP and Horovod do: a bucket is closed when adding the next tensor
// would take it past `bucket_bytes`, so a tensor larger than the bucket
// size gets a bucket of its own. Returns each bucket's size in bytes, in
// order; their sum is the sum of `tensor_bytes`.
// REQUIRES: bucket_bytes > 0.
std::vector<uint64_t> FuseBuckets(const std::vector<uint64_t>& tensor_bytes,
                                  uint64_t bucket_bytes);

// The model's buckets in bytes for gradients of `element_bytes` each
// (4 for float32). Every bucket is a whole number of elements.
// REQUIRES: bucket_bytes > 0, element_bytes > 0.
std::vector<uint64_t> ModelBucketBytes(const ModelGradients& model,
                                       uint64_t bucket_bytes,
                                       size_t element_bytes = 4);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_MODELS_H_
