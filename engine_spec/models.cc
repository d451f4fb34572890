// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/models.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"

namespace collbench {
namespace {

constexpr absl::string_view kSizesPrefix = "sizes:";
constexpr uint64_t kFloat32Bytes = 4;

// Collects parameters in forward (definition) order.
class ForwardList {
 public:
  void Add(std::string name, uint64_t elements) {
    tensors_.push_back({std::move(name), elements});
  }
  // A convolution's weight (out x in x k x k) and optional bias.
  void Conv(const std::string& name, uint64_t in, uint64_t out, uint64_t kernel,
            bool bias) {
    Add(absl::StrCat(name, ".weight"), out * in * kernel * kernel);
    if (bias) Add(absl::StrCat(name, ".bias"), out);
  }
  // A fully connected layer's weight (out x in) and bias.
  void Linear(const std::string& name, uint64_t in, uint64_t out) {
    Add(absl::StrCat(name, ".weight"), out * in);
    Add(absl::StrCat(name, ".bias"), out);
  }
  // The learned scale and shift of a BatchNorm or LayerNorm; running
  // statistics are buffers, not parameters, and have no gradient.
  void Norm(const std::string& name, uint64_t channels) {
    Add(absl::StrCat(name, ".weight"), channels);
    Add(absl::StrCat(name, ".bias"), channels);
  }
  // Gradient order: backpropagation reaches the last layer first.
  std::vector<GradientTensor> InGradientOrder() && {
    std::reverse(tensors_.begin(), tensors_.end());
    return std::move(tensors_);
  }

 private:
  std::vector<GradientTensor> tensors_;
};

// torchvision resnet50: bottleneck blocks [3, 4, 6, 3], expansion 4.
ModelGradients ResNet50() {
  constexpr int kBlocks[] = {3, 4, 6, 3};
  constexpr uint64_t kExpansion = 4;
  ForwardList list;
  list.Conv("conv1", 3, 64, 7, /*bias=*/false);
  list.Norm("bn1", 64);
  uint64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const uint64_t width = uint64_t{64} << stage;
    for (int block = 0; block < kBlocks[stage]; ++block) {
      const std::string prefix = absl::StrCat("layer", stage + 1, ".", block);
      list.Conv(prefix + ".conv1", in, width, 1, false);
      list.Norm(prefix + ".bn1", width);
      list.Conv(prefix + ".conv2", width, width, 3, false);
      list.Norm(prefix + ".bn2", width);
      list.Conv(prefix + ".conv3", width, width * kExpansion, 1, false);
      list.Norm(prefix + ".bn3", width * kExpansion);
      if (block == 0) {  // projection shortcut: channels (and stride) change
        list.Conv(prefix + ".downsample.0", in, width * kExpansion, 1, false);
        list.Norm(prefix + ".downsample.1", width * kExpansion);
      }
      in = width * kExpansion;
    }
  }
  list.Linear("fc", in, 1000);
  return {"resnet50", std::move(list).InGradientOrder(), 0.100};
}

// torchvision vgg16 (configuration "D", no batch norm): 3x3 convolutions
// with biases, 5 max-pools, classifier on the 512x7x7 feature map.
ModelGradients Vgg16() {
  constexpr int kPool = 0;
  constexpr int kConfig[] = {64,  64,  kPool, 128, 128, kPool, 256, 256, 256, kPool,
                             512, 512, 512,   kPool, 512, 512, 512, kPool};
  ForwardList list;
  uint64_t in = 3;
  int index = 0;  // position in torchvision's `features` Sequential
  for (int channels : kConfig) {
    if (channels == kPool) {
      index += 1;
      continue;
    }
    list.Conv(absl::StrCat("features.", index), in, channels, 3, /*bias=*/true);
    in = channels;
    index += 2;  // the convolution and its ReLU
  }
  // classifier: Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear.
  list.Linear("classifier.0", in * 7 * 7, 4096);
  list.Linear("classifier.3", 4096, 4096);
  list.Linear("classifier.6", 4096, 1000);
  return {"vgg16", std::move(list).InGradientOrder(), 0.150};
}

// BERT-Base uncased (BertModel with the pooler, no pre-training heads).
ModelGradients BertBase() {
  constexpr uint64_t kVocab = 30522, kHidden = 768, kLayers = 12;
  constexpr uint64_t kFeedForward = 3072, kMaxPositions = 512, kTypeVocab = 2;
  // 12 heads split kHidden; the head count does not change the shapes.
  ForwardList list;
  list.Add("embeddings.word_embeddings.weight", kVocab * kHidden);
  list.Add("embeddings.position_embeddings.weight", kMaxPositions * kHidden);
  list.Add("embeddings.token_type_embeddings.weight", kTypeVocab * kHidden);
  list.Norm("embeddings.LayerNorm", kHidden);
  for (uint64_t layer = 0; layer < kLayers; ++layer) {
    const std::string prefix = absl::StrCat("encoder.layer.", layer);
    for (const char* projection : {"query", "key", "value"}) {
      list.Linear(absl::StrCat(prefix, ".attention.self.", projection), kHidden,
                  kHidden);
    }
    list.Linear(prefix + ".attention.output.dense", kHidden, kHidden);
    list.Norm(prefix + ".attention.output.LayerNorm", kHidden);
    list.Linear(prefix + ".intermediate.dense", kHidden, kFeedForward);
    list.Linear(prefix + ".output.dense", kFeedForward, kHidden);
    list.Norm(prefix + ".output.LayerNorm", kHidden);
  }
  list.Linear("pooler.dense", kHidden, kHidden);
  return {"bert-base", std::move(list).InGradientOrder(), 0.170};
}

absl::Status InvalidModel(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--model '", text, "': ", why, "; valid values: ",
      absl::StrJoin(ModelPresetNames(), ", "), " or sizes:BYTES[,BYTES...]"));
}

// "sizes:1M,4M": tensors of float32 gradients, given in gradient order.
absl::StatusOr<ModelGradients> SizesModel(absl::string_view text) {
  const absl::string_view list = text.substr(kSizesPrefix.size());
  if (list.empty()) return InvalidModel(text, "the size list is empty");
  absl::StatusOr<std::vector<uint64_t>> sizes = ParseByteList(list);
  if (!sizes.ok()) return InvalidModel(text, sizes.status().message());
  ModelGradients model{"sizes", {}, 0.0};
  for (uint64_t bytes : *sizes) {
    if (bytes == 0 || bytes % kFloat32Bytes != 0) {
      return InvalidModel(text, absl::StrCat("tensor size ", bytes,
                                             " is not a positive multiple of 4 "
                                             "bytes (float32 gradients)"));
    }
    model.tensors.push_back({absl::StrCat("tensor", model.tensors.size()),
                             bytes / kFloat32Bytes});
  }
  return model;
}

}  // namespace

std::vector<std::string> ModelPresetNames() {
  return {"resnet50", "vgg16", "bert-base"};
}

absl::StatusOr<ModelGradients> LoadModel(absl::string_view text) {
  if (text == "resnet50") return ResNet50();
  if (text == "vgg16") return Vgg16();
  if (text == "bert-base") return BertBase();
  if (absl::StartsWith(text, kSizesPrefix)) return SizesModel(text);
  return InvalidModel(text, "unknown model");
}

uint64_t ParameterCount(const ModelGradients& model) {
  uint64_t total = 0;
  for (const GradientTensor& tensor : model.tensors) total += tensor.elements;
  return total;
}

std::vector<uint64_t> FuseBuckets(const std::vector<uint64_t>& tensor_bytes,
                                  uint64_t bucket_bytes) {
  std::vector<uint64_t> buckets;
  uint64_t current = 0;
  for (uint64_t bytes : tensor_bytes) {
    if (current > 0 && current + bytes > bucket_bytes) {
      buckets.push_back(current);
      current = 0;
    }
    current += bytes;
  }
  if (current > 0) buckets.push_back(current);
  return buckets;
}

std::vector<uint64_t> ModelBucketBytes(const ModelGradients& model,
                                       uint64_t bucket_bytes,
                                       size_t element_bytes) {
  std::vector<uint64_t> tensor_bytes;
  tensor_bytes.reserve(model.tensors.size());
  for (const GradientTensor& tensor : model.tensors) {
    tensor_bytes.push_back(tensor.elements * element_bytes);
  }
  return FuseBuckets(tensor_bytes, bucket_bytes);
}

}  // namespace collbench
