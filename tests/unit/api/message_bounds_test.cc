// SPDX-License-Identifier: Apache-2.0
// CheckMessageBounds: every string, list and map of a message bounded,
// nested ones too, naming the field; the worker inventory's bounds.
#include "api/message_bounds.h"

#include <string>

#include "absl/strings/match.h"
#include "collbench/v1/worker.pb.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

TEST(MessageBoundsTest, AnOrdinaryInventoryPasses) {
  v1::Inventory inventory;
  inventory.set_hostname("node1");
  inventory.set_kernel("6.1.0-13-amd64");
  for (int i = 0; i < 8; ++i) inventory.add_gpus()->set_name("NVIDIA H200");
  (*inventory.mutable_labels())["link"] = "tbf-1gbit";
  EXPECT_TRUE(CheckMessageBounds(inventory, InventoryBounds(), "register.inventory").ok());
}

TEST(MessageBoundsTest, EachBoundNamesTheField) {
  v1::Inventory labels;
  for (int i = 0; i < 12000; ++i) (*labels.mutable_labels())["k" + std::to_string(i)] = "v";
  absl::Status status = CheckMessageBounds(labels, InventoryBounds(), "register.inventory");
  EXPECT_EQ(status.message(), "register.inventory.labels: 12000 entries, at most 64");

  v1::Inventory long_string;
  long_string.set_kernel(std::string(5000, 'k'));
  status = CheckMessageBounds(long_string, InventoryBounds(), "register.inventory");
  EXPECT_EQ(status.message(), "register.inventory.kernel: 5000 bytes, at most 1024");

  v1::Inventory nested;
  nested.add_gpus();
  nested.add_gpus()->set_name(std::string(2000, 'g'));
  status = CheckMessageBounds(nested, InventoryBounds(), "register.inventory");
  EXPECT_EQ(status.message(), "register.inventory.gpus[1].name: 2000 bytes, at most 1024");

  v1::Inventory list;
  for (int i = 0; i < 300; ++i) list.add_rdma_devices("mlx5_0");
  status = CheckMessageBounds(list, InventoryBounds(), "register.inventory");
  EXPECT_EQ(status.message(), "register.inventory.rdma_devices: 300 entries, at most 256");

  v1::Inventory map_value;
  (*map_value.mutable_labels())["k"] = std::string(3000, 'v');
  status = CheckMessageBounds(map_value, InventoryBounds(), "register.inventory");
  EXPECT_EQ(status.message(), "register.inventory.labels.value: 3000 bytes, at most 1024");

  v1::Inventory big;
  for (int i = 0; i < 200; ++i) big.add_backends(std::string(1000, 'b'));
  status = CheckMessageBounds(big, InventoryBounds(), "register.inventory");
  EXPECT_TRUE(absl::StartsWith(status.message(), "register.inventory: ")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "bytes in all, at most 65536")) << status;
}

}  // namespace
}  // namespace collbench
