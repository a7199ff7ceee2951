// Scope text: 'system', 'tenantless', 'tenant:<id>'.
#include <gtest/gtest.h>

#include <string>

#include "core/limits.hpp"
#include "core/scope.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;

TEST(ParseScope, System) {
  const Scope s = parse_scope("system");
  EXPECT_EQ(s.kind, Scope::Kind::system);
  EXPECT_TRUE(s.is_system());
}

TEST(ParseScope, Tenantless) {
  const Scope s = parse_scope("tenantless");
  EXPECT_EQ(s.kind, Scope::Kind::tenantless);
  EXPECT_FALSE(s.is_system());
  EXPECT_FALSE(s.tenant_id().has_value());
}

TEST(ParseScope, Tenant) {
  const Scope s = parse_scope("tenant:acme");
  EXPECT_EQ(s.kind, Scope::Kind::tenant);
  EXPECT_FALSE(s.is_system());
  EXPECT_EQ(s.tenant, "acme");
  EXPECT_EQ(s.tenant_id(), std::optional<std::string>("acme"));
}

TEST(ParseScope, TenantIdMayContainColons) {
  EXPECT_EQ(parse_scope("tenant:a:b").tenant, "a:b");
  EXPECT_EQ(parse_scope("tenant::").tenant, ":");
  EXPECT_EQ(parse_scope("tenant: x ").tenant, " x ");
}

TEST(ParseScope, MalformedScopes) {
  for (const char* s : {"", "tenant:", "tenant", "System", "SYSTEM", "tenantless ", " system",
                        "tenants:x", "Tenant:x", "anything"}) {
    SCOPED_TRACE(s);
    expect_error([&] { parse_scope(s); }, Reason::bad_argument, "is not 'system'");
  }
}

TEST(ParseOwnerScope, AcceptsTenantlessAndTenant) {
  EXPECT_EQ(parse_owner_scope("tenantless").kind, Scope::Kind::tenantless);
  EXPECT_EQ(parse_owner_scope("tenant:t1").tenant, "t1");
}

TEST(ParseOwnerScope, SystemIsNotAnOwner) {
  expect_error([] { parse_owner_scope("system"); }, Reason::bad_argument,
               "owner_scope must be 'tenantless' or 'tenant:<id>', not 'system'");
}

TEST(ParseOwnerScope, TenantIdIsAtMostTheCap) {
  const std::string longest(kMaxTenantBytes, 't');
  EXPECT_EQ(parse_owner_scope("tenant:" + longest).tenant, longest);
  expect_error([&] { parse_owner_scope("tenant:" + longest + "t"); }, Reason::bad_argument,
               "owner_scope's tenant id is 1001 bytes, over 1000");
  // A read scope is not capped (a run stored before the cap may have one).
  EXPECT_EQ(parse_scope("tenant:" + longest + "t").tenant.size(), kMaxTenantBytes + 1);
}

TEST(ParseOwnerScope, MalformedTextIsStillBadArgument) {
  expect_error([] { parse_owner_scope("tenant:"); }, Reason::bad_argument, "is not 'system'");
}

}  // namespace
}  // namespace docket
