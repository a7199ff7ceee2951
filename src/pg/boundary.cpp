#include "pg/boundary.hpp"

namespace docket::pg {

void raise_pending(ErrorData* pg_error, const char* sqlstate, const char* message) {
  if (pg_error != nullptr) ReThrowError(pg_error);
  ereport(ERROR,
          (errcode(MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2], sqlstate[3], sqlstate[4])),
           errmsg_internal("%s", message)));
  pg_unreachable();
}

}  // namespace docket::pg
