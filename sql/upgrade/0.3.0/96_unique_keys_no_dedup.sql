-- The claim and list indexes hold no two equal keys but the versions of one
-- row (each key ends in or holds the run id): deduplication, which scanned
-- every full leaf page for duplicates before splitting it, is off for them,
-- as in a fresh install (sql/install/0.3.0/20_run_store_tables.sql).
ALTER INDEX docket.runs_ready SET (deduplicate_items = off);
ALTER INDEX docket.runs_ready_queue SET (deduplicate_items = off);
ALTER INDEX docket.runs_claimed SET (deduplicate_items = off);
ALTER INDEX docket.run_heads_list SET (deduplicate_items = off);
ALTER INDEX docket.run_heads_tenant SET (deduplicate_items = off);
ALTER INDEX docket.run_heads_graph SET (deduplicate_items = off);
