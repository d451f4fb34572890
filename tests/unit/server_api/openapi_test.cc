// SPDX-License-Identifier: Apache-2.0
// docs/openapi.yaml and the coordinator's HTTP routes describe the same
// API: the method table's bindings (server/api/method_table.cc), the
// service's routes and the /ui/ pages, as the coordinator serves them
// (server/app/http_frontend.h). Every route is described with its method,
// summary, access and query parameters, and every described operation is
// a route.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mini_yaml.h"
#include "server/api/handlers.h"
#include "server/api/rest_router.h"
#include "server/app/http_frontend.h"
#include "server/ui/ui.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAreArray;
using testing_yaml::ParseYaml;
using testing_yaml::YamlNode;

// Every route the coordinator's HTTP listener serves. The handlers are
// never called here.
const std::vector<RestRoute>& RestRoutes() {
  static CoordinatorApi* const api = new CoordinatorApi(ApiParts{});
  static Ui* const ui = new Ui(api, nullptr, RealClock(), UiOptions{});
  static const std::vector<RestRoute>* const routes =
      new std::vector<RestRoute>(CoordinatorRestRoutes(api, ui, ServiceRouteOptions{}));
  return *routes;
}

RouteMatch MatchRoute(absl::string_view method, absl::string_view path) {
  return collbench::MatchRoute(RestRoutes(), method, path);
}

YamlNode LoadOpenApi() {
  std::ifstream in(COLLBENCH_OPENAPI_FILE);
  EXPECT_TRUE(in.good()) << "cannot read " << COLLBENCH_OPENAPI_FILE;
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<YamlNode> doc = ParseYaml(text.str());
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? *doc : YamlNode();
}

// A parameter, following "$ref: '#/components/parameters/X'".
const YamlNode* Resolve(const YamlNode& doc, const YamlNode& parameter) {
  const YamlNode* ref = parameter.Get("$ref");
  if (ref == nullptr) return &parameter;
  const std::string prefix = "#/components/parameters/";
  if (!absl::StartsWith(ref->scalar, prefix)) return nullptr;
  const YamlNode* parameters = doc.Get("components")->Get("parameters");
  return parameters == nullptr ? nullptr : parameters->Get(ref->scalar.substr(prefix.size()));
}

// The names of the operation's parameters that are `in` there.
std::set<std::string> ParameterNames(const YamlNode& doc, const YamlNode& operation,
                                     absl::string_view in) {
  std::set<std::string> names;
  const YamlNode* parameters = operation.Get("parameters");
  if (parameters == nullptr) return names;
  for (const YamlNode& p : parameters->list) {
    const YamlNode* resolved = Resolve(doc, p);
    EXPECT_NE(resolved, nullptr) << "unresolvable parameter";
    if (resolved == nullptr) continue;
    if (resolved->Get("in") != nullptr && resolved->Get("in")->scalar == in) {
      names.insert(resolved->Get("name")->scalar);
    }
  }
  return names;
}

TEST(OpenApiTest, EveryRouteIsDescribed) {
  const YamlNode doc = LoadOpenApi();
  const YamlNode* paths = doc.Get("paths");
  ASSERT_NE(paths, nullptr);
  for (const RestRoute& route : RestRoutes()) {
    SCOPED_TRACE(route.Template());
    const YamlNode* path = paths->Get(route.path);
    ASSERT_NE(path, nullptr) << "path not in docs/openapi.yaml";
    const YamlNode* operation = path->Get(absl::AsciiStrToLower(route.method));
    ASSERT_NE(operation, nullptr) << "method not in docs/openapi.yaml";
    ASSERT_NE(operation->Get("summary"), nullptr);
    EXPECT_EQ(operation->Get("summary")->scalar, route.summary);
    ASSERT_NE(operation->Get("x-collbench-access"), nullptr);
    EXPECT_EQ(operation->Get("x-collbench-access")->scalar, RoleName(route.role));
    EXPECT_THAT(ParameterNames(doc, *operation, "query"),
                UnorderedElementsAreArray(route.query_params));
    const bool has_id = absl::StrContains(route.path, "{id}");
    EXPECT_EQ(ParameterNames(doc, *operation, "path"),
              has_id ? std::set<std::string>{"id"} : std::set<std::string>{});
    const YamlNode* responses = operation->Get("responses");
    ASSERT_NE(responses, nullptr);
    EXPECT_NE(responses->Get("200"), nullptr);
    const YamlNode* security = operation->Get("security");
    if (route.role == Role::kPublic) {
      // Public routes opt out of the document-wide bearer requirement.
      ASSERT_NE(security, nullptr);
      EXPECT_EQ(security->scalar, "[]");
    } else {
      EXPECT_EQ(security, nullptr);
      EXPECT_NE(responses->Get("401"), nullptr);
      // A worker token is refused on reads too.
      EXPECT_NE(responses->Get("403"), nullptr);
    }
  }
}

TEST(OpenApiTest, EveryDescribedOperationIsARoute) {
  const YamlNode doc = LoadOpenApi();
  const YamlNode* paths = doc.Get("paths");
  ASSERT_NE(paths, nullptr);
  std::set<std::string> served;
  for (const RestRoute& route : RestRoutes()) served.insert(route.Template());
  int operations = 0;
  for (const auto& [path, methods] : paths->map) {
    ASSERT_EQ(methods.kind, YamlNode::Kind::kMap) << path;
    for (const auto& [method, operation] : methods.map) {
      ++operations;
      const std::string name = absl::AsciiStrToUpper(method) + " " + path;
      EXPECT_TRUE(served.count(name)) << name << " is described but not served";
    }
  }
  EXPECT_EQ(operations, static_cast<int>(RestRoutes().size()));
}

// What every route may answer besides its own responses: a method the path
// does not define (405), a foreign Host on loopback (421), and enums in any
// case; and a RunSpec's required fields.
TEST(OpenApiTest, DescribesAnswersCommonToEveryRoute) {
  const YamlNode doc = LoadOpenApi();
  const std::string& description = doc.Get("info")->Get("description")->scalar;
  EXPECT_THAT(description, ::testing::HasSubstr("405 with an Allow header"));
  EXPECT_THAT(description, ::testing::HasSubstr("421"));
  EXPECT_THAT(description, ::testing::HasSubstr("accepted in any case"));
  const YamlNode* spec = doc.Get("components")->Get("schemas")->Get("RunSpec");
  ASSERT_NE(spec, nullptr);
  ASSERT_NE(spec->Get("required"), nullptr);
  EXPECT_EQ(spec->Get("required")->scalar, "[operation, ranks]");
}

TEST(OpenApiTest, DescribesBearerTokensAndTheErrorBody) {
  const YamlNode doc = LoadOpenApi();
  ASSERT_NE(doc.Get("openapi"), nullptr);
  EXPECT_TRUE(absl::StartsWith(doc.Get("openapi")->scalar, "3.0"));
  const YamlNode* components = doc.Get("components");
  ASSERT_NE(components, nullptr);
  const YamlNode* bearer = components->Get("securitySchemes")->Get("bearer");
  ASSERT_NE(bearer, nullptr);
  EXPECT_EQ(bearer->Get("type")->scalar, "http");
  EXPECT_EQ(bearer->Get("scheme")->scalar, "bearer");
  const YamlNode* security = doc.Get("security");
  ASSERT_NE(security, nullptr);
  ASSERT_EQ(security->list.size(), 1u);
  EXPECT_NE(security->list[0].Get("bearer"), nullptr);
  const YamlNode* error = components->Get("schemas")->Get("Error");
  ASSERT_NE(error, nullptr);
  std::set<std::string> fields;
  for (const auto& [name, schema] : error->Get("properties")->map) fields.insert(name);
  EXPECT_THAT(fields, UnorderedElementsAreArray({"code", "status", "message", "details"}));
}

TEST(RoutesTest, TemplatesMatchOneSegment) {
  std::string id;
  EXPECT_TRUE(MatchTemplate("/v1/runs/{id}", "/v1/runs/abc-1", &id));
  EXPECT_EQ(id, "abc-1");
  EXPECT_TRUE(MatchTemplate("/v1/runs/{id}:cancel", "/v1/runs/abc:cancel", &id));
  EXPECT_EQ(id, "abc");
  EXPECT_TRUE(MatchTemplate("/v1/runs/{id}/results", "/v1/runs/x/results", &id));
  EXPECT_EQ(id, "x");
  EXPECT_FALSE(MatchTemplate("/v1/runs/{id}", "/v1/runs/abc:cancel", &id));
  EXPECT_FALSE(MatchTemplate("/v1/runs/{id}", "/v1/runs/", &id));
  EXPECT_FALSE(MatchTemplate("/v1/runs/{id}", "/v1/runs/a/b", &id));
  EXPECT_FALSE(MatchTemplate("/v1/runs/{id}:cancel", "/v1/runs/:cancel", &id));
  EXPECT_TRUE(MatchTemplate("/v1/runs", "/v1/runs", &id));
  EXPECT_FALSE(MatchTemplate("/v1/runs", "/v1/runs/", &id));
}

TEST(RoutesTest, MethodAndPathPickOneRoute) {
  RouteMatch match = MatchRoute("POST", "/v1/runs/r1:cancel");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->Template(), "POST /v1/runs/{id}:cancel");
  EXPECT_EQ(match.id, "r1");
  match = MatchRoute("HEAD", "/healthz");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->Template(), "GET /healthz");
  match = MatchRoute("DELETE", "/v1/runs");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_TRUE(match.path_known);
  EXPECT_EQ(match.allow, "POST, GET");
  match = MatchRoute("GET", "/v2/runs");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_FALSE(match.path_known);
}

// Deleting and undraining follow the design guide: DELETE on the
// resource, a custom method beside :drain.
TEST(RoutesTest, LifecycleMethodsAreRoutedAsTheGuideSays) {
  RouteMatch match = MatchRoute("DELETE", "/v1/runs/r1");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->Template(), "DELETE /v1/runs/{id}");
  EXPECT_EQ(match.route->role, Role::kOperator);
  EXPECT_EQ(match.id, "r1");
  match = MatchRoute("DELETE", "/v1/workers/w1");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->Template(), "DELETE /v1/workers/{id}");
  EXPECT_EQ(match.route->role, Role::kOperator);
  match = MatchRoute("POST", "/v1/workers/w1:undrain");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->Template(), "POST /v1/workers/{id}:undrain");
  EXPECT_EQ(match.route->role, Role::kOperator);
  match = MatchRoute("PUT", "/v1/runs/r1");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.allow, "GET, DELETE");
}

TEST(RoutesTest, TemplatesAreUnique) {
  std::set<std::string> seen;
  for (const RestRoute& route : RestRoutes()) {
    EXPECT_TRUE(seen.insert(route.Template()).second) << route.Template();
    EXPECT_NE(route.handler, nullptr) << route.Template();
  }
}

TEST(MiniYamlTest, ReadsTheSubsetTheOpenApiFileUses) {
  absl::StatusOr<YamlNode> doc = ParseYaml(
      "# comment\n"
      "a: 1\n"
      "\"/x/{id}:y\":\n"
      "  get:\n"
      "    summary: Hello, world  # trailing\n"
      "    text: |\n"
      "      line one\n"
      "      line: two\n"
      "    list:\n"
      "      - name: p\n"
      "        in: query\n"
      "      - plain\n"
      "    flow: [a, b]\n"
      "b: 'quoted'\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->Get("a")->scalar, "1");
  const YamlNode* get = doc->Get("/x/{id}:y")->Get("get");
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get->Get("summary")->scalar, "Hello, world");
  EXPECT_TRUE(absl::StrContains(get->Get("text")->scalar, "line: two"));
  ASSERT_EQ(get->Get("list")->list.size(), 2u);
  EXPECT_EQ(get->Get("list")->list[0].Get("in")->scalar, "query");
  EXPECT_EQ(get->Get("list")->list[1].scalar, "plain");
  EXPECT_EQ(get->Get("flow")->scalar, "[a, b]");
  EXPECT_EQ(doc->Get("b")->scalar, "quoted");
  EXPECT_FALSE(ParseYaml("a:\n    b: 1\n  c: 2\n").ok());
}

}  // namespace
}  // namespace collbench
