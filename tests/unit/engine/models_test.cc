// SPDX-License-Identifier: Apache-2.0
// The gradient-replay model presets and bucket fusion
// (docs/design/data-plane.md#scenarios): the presets must match the published
// parameter counts, and fusion must follow DDP/Horovod.
#include "engine_spec/models.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

uint64_t Sum(const std::vector<uint64_t>& values) {
  return std::accumulate(values.begin(), values.end(), uint64_t{0});
}

ModelGradients Load(const std::string& name) {
  absl::StatusOr<ModelGradients> model = LoadModel(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : ModelGradients{};
}

TEST(ModelsTest, ResNet50MatchesTorchvision) {
  const ModelGradients model = Load("resnet50");
  EXPECT_EQ(ParameterCount(model), 25557032u);
  EXPECT_EQ(model.tensors.size(), 161u);
}

TEST(ModelsTest, Vgg16MatchesTorchvision) {
  const ModelGradients model = Load("vgg16");
  EXPECT_EQ(ParameterCount(model), 138357544u);
  EXPECT_EQ(model.tensors.size(), 32u);
}

TEST(ModelsTest, BertBaseMatchesPublishedCount) {
  const ModelGradients model = Load("bert-base");
  EXPECT_EQ(ParameterCount(model), 109482240u);
  // 5 embedding tensors, 16 per encoder layer, 2 for the pooler.
  EXPECT_EQ(model.tensors.size(), 5u + 12u * 16u + 2u);
}

TEST(ModelsTest, GradientsComeLastLayerFirst) {
  const ModelGradients resnet = Load("resnet50");
  EXPECT_EQ(resnet.tensors.front().name, "fc.bias");
  EXPECT_EQ(resnet.tensors[1].name, "fc.weight");
  EXPECT_EQ(resnet.tensors[1].elements, 2048u * 1000u);
  EXPECT_EQ(resnet.tensors.back().name, "conv1.weight");
  EXPECT_EQ(resnet.tensors.back().elements, 64u * 3u * 7u * 7u);

  const ModelGradients vgg = Load("vgg16");
  EXPECT_EQ(vgg.tensors.front().name, "classifier.6.bias");
  EXPECT_EQ(vgg.tensors[5].name, "classifier.0.weight");
  EXPECT_EQ(vgg.tensors[5].elements, 25088u * 4096u);
  EXPECT_EQ(vgg.tensors.back().name, "features.0.weight");

  const ModelGradients bert = Load("bert-base");
  EXPECT_EQ(bert.tensors.front().name, "pooler.dense.bias");
  EXPECT_EQ(bert.tensors.back().name, "embeddings.word_embeddings.weight");
  EXPECT_EQ(bert.tensors.back().elements, 30522u * 768u);
}

TEST(ModelsTest, PresetsHaveNominalComputeTimes) {
  for (const std::string& name : ModelPresetNames()) {
    EXPECT_GT(Load(name).nominal_compute_s, 0) << name;
  }
}

TEST(FuseBucketsTest, PacksInOrderUntilTheNextTensorWouldOverflow) {
  EXPECT_THAT(FuseBuckets({4, 4, 4, 4, 4}, 10), ElementsAre(8, 8, 4));
}

TEST(FuseBucketsTest, ExactFitClosesTheBucketAfterTheTensor) {
  EXPECT_THAT(FuseBuckets({6, 4, 10, 1}, 10), ElementsAre(10, 10, 1));
}

TEST(FuseBucketsTest, TensorLargerThanTheBucketGetsItsOwn) {
  EXPECT_THAT(FuseBuckets({2, 50, 3}, 10), ElementsAre(2, 50, 3));
  EXPECT_THAT(FuseBuckets({50}, 10), ElementsAre(50));
}

TEST(FuseBucketsTest, OrderMatters) {
  EXPECT_THAT(FuseBuckets({6, 6, 4, 4}, 10), ElementsAre(6, 10, 4));
  EXPECT_THAT(FuseBuckets({4, 4, 6, 6}, 10), ElementsAre(8, 6, 6));
}

TEST(FuseBucketsTest, EmptyListHasNoBuckets) {
  EXPECT_TRUE(FuseBuckets({}, 10).empty());
}

TEST(FuseBucketsTest, OneByteBucketsReduceTensorByTensor) {
  const ModelGradients model = Load("resnet50");
  EXPECT_EQ(ModelBucketBytes(model, 1).size(), model.tensors.size());
}

TEST(ModelBucketBytesTest, ResNet50WithDdpDefaultBuckets) {
  const ModelGradients model = Load("resnet50");
  const std::vector<uint64_t> buckets = ModelBucketBytes(model, 25u << 20);
  EXPECT_EQ(Sum(buckets), 25557032u * 4u);
  // ~97.5 MiB of gradients cannot fit in fewer than four 25 MiB buckets.
  EXPECT_GE(buckets.size(), 4u);
  for (uint64_t bytes : buckets) {
    EXPECT_LE(bytes, 25u << 20);
    EXPECT_EQ(bytes % 4, 0u);
  }
  // The first bucket starts with fc (8,196,000 bytes), the first gradient.
  EXPECT_GE(buckets.front(), 2049000u * 4u);
}

TEST(ModelBucketBytesTest, Vgg16FirstLayerOfClassifierIsItsOwnBucket) {
  const ModelGradients model = Load("vgg16");
  const std::vector<uint64_t> buckets = ModelBucketBytes(model, 25u << 20);
  const uint64_t fc6_bytes = 25088u * 4096u * 4u;  // ~392 MiB
  EXPECT_THAT(buckets, ::testing::Contains(fc6_bytes));
  EXPECT_EQ(Sum(buckets), 138357544u * 4u);
}

TEST(ModelBucketBytesTest, ElementSizeScalesBuckets) {
  const ModelGradients model = Load("sizes:4,8,12");
  EXPECT_THAT(ModelBucketBytes(model, 8, 4), ElementsAre(4, 8, 12));
  EXPECT_THAT(ModelBucketBytes(model, 8, 2), ElementsAre(6, 6));
  EXPECT_THAT(ModelBucketBytes(model, 8, 8), ElementsAre(8, 16, 24));
}

TEST(SizesModelTest, ParsesByteListAsFloat32Tensors) {
  const ModelGradients model = Load("sizes:1M,4M,64K");
  EXPECT_EQ(model.name, "sizes");
  ASSERT_EQ(model.tensors.size(), 3u);
  EXPECT_EQ(model.tensors[0].elements, (1u << 20) / 4);
  EXPECT_EQ(model.tensors[1].elements, (4u << 20) / 4);
  EXPECT_EQ(model.tensors[2].elements, (64u << 10) / 4);
  EXPECT_EQ(model.nominal_compute_s, 0);
}

TEST(SizesModelTest, RejectsBadLists) {
  for (const char* text : {"sizes:", "sizes:1M,,2M", "sizes:abc", "sizes:0",
                           "sizes:6", "sizes:1M,-4"}) {
    absl::StatusOr<ModelGradients> model = LoadModel(text);
    ASSERT_FALSE(model.ok()) << text;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(model.status().message(), HasSubstr("--model")) << text;
  }
}

TEST(LoadModelTest, UnknownModelListsValidValues) {
  absl::StatusOr<ModelGradients> model = LoadModel("resnet-50");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("--model"));
  EXPECT_THAT(model.status().message(), HasSubstr("resnet50, vgg16, bert-base"));
  EXPECT_THAT(model.status().message(), HasSubstr("sizes:"));
}

}  // namespace
}  // namespace collbench
