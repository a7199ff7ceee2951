# docket: a PostgreSQL 15 extension in C++17, built with PGXS.
#   make / make install     build and install the extension
#   make test               install what is missing, run every suite on a throwaway cluster
#   make demo               a narrated psql session on a throwaway cluster
#   make unit               GoogleTest suite of the pure C++ core (no server)
#   make format-check, make tidy   clang-format (no diff) and clang-tidy (src/ and client/);
#                           make test runs both

EXTENSION = docket
MODULE_big = docket
# The SQL scripts are written as pieces, one file per concern, and assembled
# here in name order; an assembled file is never edited:
#   sql/install/<version>/*.sql  the install script of the current version
#                                (docket--<version>.sql: every object once, in
#                                its final form; CREATE EXTENSION runs it alone)
#   sql/upgrade/<version>/*.sql  the upgrade script to <version> from the one
#                                before (docket--<previous>--<version>.sql)
# The install script ends with four pieces of the 0.3.0 upgrade, shared: the
# composer of a task's document (created the same way by both), the id limits
# of insert_run and save_graph (their comments say them in the same words), the
# tenant key of an owner scope (docket._tenant_key, with its cap), and the roles
# piece (the roles, every grant decision and SECURITY DEFINER are decided in one
# place).
UPGRADE_PIECES_0_2_0 = $(sort $(wildcard sql/upgrade/0.2.0/*.sql))
UPGRADE_PIECES_0_3_0 = $(sort $(wildcard sql/upgrade/0.3.0/*.sql))
INSTALL_PIECES_0_3_0 = $(sort $(wildcard sql/install/0.3.0/*.sql)) \
                       sql/upgrade/0.3.0/93_narrow_task_document.sql sql/upgrade/0.3.0/95_id_limits.sql \
                       sql/upgrade/0.3.0/97_owner_tenant_limit.sql \
                       sql/upgrade/0.3.0/99_roles.sql
ASSEMBLED = sql/docket--0.1.0--0.2.0.sql sql/docket--0.2.0--0.3.0.sql sql/docket--0.3.0.sql
DATA = $(sort $(filter-out $(wildcard sql/*--*--*.sql),$(wildcard sql/docket--*.sql)) \
       $(wildcard sql/docket--*--*.sql) $(ASSEMBLED))

CORE_SRCS = $(sort $(wildcard src/core/*.cpp))
PG_SRCS = $(sort $(wildcard src/pg/*.cpp))
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

# pg_regress: sql/<name>.sql against expected/<name>.out
REGRESS = $(sort $(notdir $(basename $(filter-out sql/docket--%,$(wildcard sql/*.sql)))))
REGRESS_OPTS = --inputdir=. --outputdir=test/regress_output
# pg_isolation_regress: test/isolation/specs/<name>.spec
ISOLATION = $(sort $(notdir $(basename $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=test/isolation/output

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
SERVER_INCLUDE := $(shell $(PG_CONFIG) --includedir-server 2>/dev/null)

PG_CPPFLAGS = -I$(CURDIR)/src -isystem $(SERVER_INCLUDE)
# -MMD -MP: each object also writes the headers it read (src/**/*.d, included
# below), so a header change rebuilds every object that includes it.
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-register -Wno-unused-parameter \
              -Wno-missing-field-initializers -fno-omit-frame-pointer -MMD -MP
SHLIB_LINK = -lstdc++
EXTRA_CLEAN = test/regress_output test/isolation/output build $(ASSEMBLED) $(OBJS:.o=.d)

# Debian's PGXS enables LLVM bitcode, which C++ sources cannot produce with g++.
override with_llvm = no

.DEFAULT_GOAL := all

all: $(ASSEMBLED)
sql/docket--0.1.0--0.2.0.sql: $(UPGRADE_PIECES_0_2_0)
	cat $^ > $@
sql/docket--0.2.0--0.3.0.sql: $(UPGRADE_PIECES_0_3_0)
	cat $^ > $@
sql/docket--0.3.0.sql: $(INSTALL_PIECES_0_3_0)
	cat $^ > $@
.PHONY: test test-sanitize demo unit format format-check tidy

test:
	bash scripts/test.sh

# The client suites under each sanitizer of SANITIZERS.
SANITIZERS ?= address thread
test-sanitize:
	SANITIZERS="$(SANITIZERS)" bash scripts/test_sanitize.sh

demo:
	bash scripts/demo.sh

# One object per source under build/unit (so `make -j unit` compiles them in
# parallel), each recording the headers it read like the extension's objects.
UNIT_SRCS = $(sort $(wildcard test/unit/*.cpp))
UNIT_OBJS = $(patsubst %.cpp,build/unit/%.o,$(CORE_SRCS) $(UNIT_SRCS))
build/unit/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -O1 -g -Isrc -MMD -MP -c $< -o $@
build/unit_tests: $(UNIT_OBJS)
	$(CXX) $(UNIT_OBJS) -lgtest -lgtest_main -pthread -o $@

unit: build/unit_tests
	./build/unit_tests

FORMATTED = src/core/*.[ch]pp src/pg/*.[ch]pp test/unit/*.[ch]pp client/include/docket/*.hpp \
            client/src/*.[ch]pp client/tools/*.cpp client/tools/*/*.[ch]pp client/test/*.[ch]pp \
            examples/cpp/*.cpp bench/worker/*.cpp bench/serve/*.cpp

format:
	clang-format -i $(wildcard $(FORMATTED))

format-check:
	clang-format --dry-run --Werror $(wildcard $(FORMATTED))

# clang-tidy over src/ and client/ (scripts/tidy.sh), TIDY_JOBS files at a time.
tidy:
	bash scripts/tidy.sh

ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
endif

-include $(OBJS:.o=.d) $(UNIT_OBJS:.o=.d)
