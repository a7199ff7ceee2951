// The document a run's readers see (src/pg/run_document.cpp): a task's row
// stores only what its columns do not say, and every statement that returns
// a run's document reads it through docket._run_document.
#pragma once

// The run's document, in a statement over docket.runs (unqualified columns).
#define DOCKET_RUN_DOCUMENT                                                              \
  "docket._run_document(document, run_id, graph_id, graph_hash, status, checkpoint_seq," \
  " started_at)"

// What a task's transition builds its stored document on (docket.runs AS r):
// the stored one without its waiting entry, and without the keys that are
// columns, so that a full document a commit stored becomes a narrow one at
// the task's next transition.
#define DOCKET_TASK_DOCUMENT_BASE \
  "(r.document - '{waiting,id,graph_id,graph_hash,status,checkpoint_seq,started_at}'::text[])"
