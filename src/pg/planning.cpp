// The planner hook behind IndexPlanning (planning.hpp). It is C-style on
// purpose: the planner may raise an error, which longjmps through this frame,
// so the frame holds nothing with a destructor; the transaction's (or
// subtransaction's) abort pops the GUC level it pushed.
#include "pg/planning.hpp"

#include "pg/postgres.hpp"

extern "C" {
#include "optimizer/planner.h"
}

namespace docket::pg {

namespace {

planner_hook_type previous_planner = nullptr;
int depth = 0;         // live IndexPlanning objects
int nested_depth = 0;  // of which made with nested_loops

// The planner this hook wraps: another extension's hook, or PostgreSQL's own.
PlannedStmt* next_planner(Query* parse, const char* query_string, int cursor_options,
                          ParamListInfo bound_params) {
  return previous_planner != nullptr
             ? previous_planner(parse, query_string, cursor_options, bound_params)
             : standard_planner(parse, query_string, cursor_options, bound_params);
}

PlannedStmt* plan(Query* parse, const char* query_string, int cursor_options,
                  ParamListInfo bound_params) {
  if (depth == 0) return next_planner(parse, query_string, cursor_options, bound_params);
  const int level = NewGUCNestLevel();
  (void)set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                          true, 0, false);
  (void)set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                          true, 0, false);
  if (nested_depth > 0) {
    (void)set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    (void)set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
  }
  PlannedStmt* result = next_planner(parse, query_string, cursor_options, bound_params);
  AtEOXact_GUC(true, level);
  return result;
}

// An error that ends the transaction may have skipped a destructor only if it
// never came back through pg::call; start the next transaction at zero anyway.
void reset_at_end(XactEvent event, void*) noexcept {
  if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) depth = nested_depth = 0;
}

}  // namespace

void register_planner_hook() {
  previous_planner = planner_hook;
  planner_hook = plan;
  RegisterXactCallback(reset_at_end, nullptr);
}

IndexPlanning::IndexPlanning(bool nested_loops) noexcept : nested_loops_(nested_loops) {
  ++depth;
  if (nested_loops_) ++nested_depth;
}

IndexPlanning::~IndexPlanning() {
  if (depth > 0) --depth;
  if (nested_loops_ && nested_depth > 0) --nested_depth;
}

}  // namespace docket::pg
