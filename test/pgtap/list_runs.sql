-- list_runs: pages of run summaries, newest first by (started_at, run_id), after
-- an exclusive keyset cursor, under a scope and filters.
BEGIN;
SELECT plan(75);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

SELECT is((SELECT count(*) FROM docket.runs), 0::bigint, 'the store starts empty');

-- Fixture, 25 runs from T = 2030-01-01 00:00Z:
--   tenant a   lr-a01..lr-a12 at T + i min; graph by i % 3: 0 (g1, h1), 1 (g1, h2),
--              2 (g2, h1); status by i % 5: running, waiting, completed, failed, cancelled
--   tenant b   lr-b01..lr-b05 at T + i min (ties with tenant a), graph by (i + 1) % 3,
--              status by (i + 2) % 5
--   tenantless lr-n01..lr-n06 at T + 2i min, graph by i % 3, status by (i + 1) % 5
--   tenant a:x lr-x01..lr-x02 at T + 5i min, (g2, h1), waiting
-- Every document carries "secret": "doc-only", which a summary must never show.
CREATE FUNCTION pg_temp.add(scope docket.scope, id text, minutes int, combo int, status int)
  RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM docket.insert_run(scope, jsonb_build_object(
    'id', id,
    'graph_id', (ARRAY['lr-g1', 'lr-g1', 'lr-g2'])[combo % 3 + 1],
    'graph_hash', (ARRAY['lr-h1', 'lr-h2', 'lr-h1'])[combo % 3 + 1],
    'status', (ARRAY['running', 'waiting', 'completed', 'failed', 'cancelled'])[status % 5 + 1],
    'checkpoint_seq', 0,
    'started_at', to_char(timestamptz '2030-01-01 00:00:00+00' + minutes * interval '1 minute',
                          'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    'secret', 'doc-only'), 'run_initialized', '2030-01-01T00:00:00Z');
END
$$;

DO $fixture$
BEGIN
  PERFORM docket.save_graph('lr-g1', 'lr-h1', '{}');
  PERFORM docket.save_graph('lr-g1', 'lr-h2', '{}');
  PERFORM docket.save_graph('lr-g2', 'lr-h1', '{}');
  FOR i IN 1..12 LOOP
    PERFORM pg_temp.add('tenant:a', 'lr-a' || lpad(i::text, 2, '0'), i, i, i);
  END LOOP;
  FOR i IN 1..5 LOOP
    PERFORM pg_temp.add('tenant:b', 'lr-b' || lpad(i::text, 2, '0'), i, i + 1, i + 2);
  END LOOP;
  FOR i IN 1..6 LOOP
    PERFORM pg_temp.add('tenantless', 'lr-n' || lpad(i::text, 2, '0'), 2 * i, i, i + 1);
  END LOOP;
  FOR i IN 1..2 LOOP
    PERFORM pg_temp.add('tenant:a:x', 'lr-x' || lpad(i::text, 2, '0'), 5 * i, 2, 1);
  END LOOP;
END
$fixture$;

-- The oracle: matching run ids straight from the table, newest first.
CREATE FUNCTION pg_temp.expected(scope text, gid text DEFAULT NULL, gh text DEFAULT NULL,
                                 sts text[] DEFAULT NULL) RETURNS text[]
  LANGUAGE sql AS $$
  SELECT coalesce(array_agg(run_id ORDER BY started_at DESC, run_id DESC), '{}')
    FROM docket.runs
   WHERE (scope = 'system' OR (scope = 'tenantless' AND tenant_id IS NULL)
          OR (scope LIKE 'tenant:%' AND tenant_id = substr(scope, 8)))
     AND (gid IS NULL OR graph_id = gid) AND (gh IS NULL OR graph_hash = gh)
     AND (sts IS NULL OR status = ANY (sts))
$$;

-- Pages through everything with next_before; returns the ids in page order, the
-- number of pages, each page's has_more, and any broken page invariant.
CREATE FUNCTION pg_temp.page_all(scope docket.scope, size int, gid text DEFAULT NULL,
                                 gh text DEFAULT NULL, sts text[] DEFAULT NULL,
                                 OUT ids text[], OUT pages int, OUT flags boolean[],
                                 OUT problems text[])
  LANGUAGE plpgsql AS $$
DECLARE
  page jsonb;
  at timestamptz;
  id text;
  n int;
  last jsonb;
BEGIN
  ids := '{}'; pages := 0; flags := '{}'; problems := '{}';
  LOOP
    page := docket.list_runs(scope, size, at, id, gid, gh, sts);
    pages := pages + 1;
    n := jsonb_array_length(page -> 'entries');
    ids := ids || ARRAY(SELECT e ->> 'run_id'
                          FROM jsonb_array_elements(page -> 'entries') WITH ORDINALITY AS x (e, o)
                         ORDER BY o);
    flags := flags || (page -> 'has_more')::boolean;
    IF n > size THEN
      problems := problems || format('page %s has %s entries', pages, n);
    END IF;
    IF (page -> 'has_more')::boolean AND n <> size THEN
      problems := problems || format('page %s has more but only %s entries', pages, n);
    END IF;
    IF n > 0 THEN
      last := page -> 'entries' -> (n - 1);
      IF page -> 'next_before' IS DISTINCT FROM
         jsonb_build_object('started_at', last -> 'started_at', 'run_id', last -> 'run_id') THEN
        problems := problems || format('page %s: next_before %s is not its last entry', pages,
                                       page -> 'next_before');
      END IF;
    ELSIF page -> 'next_before' IS DISTINCT FROM
          (CASE WHEN id IS NULL THEN 'null'::jsonb
                ELSE jsonb_build_object('started_at', at, 'run_id', id) END) THEN
      problems := problems || format('empty page %s: next_before %s is not the cursor', pages,
                                     page -> 'next_before');
    END IF;
    EXIT WHEN NOT (page -> 'has_more')::boolean;
    at := (page -> 'next_before' ->> 'started_at')::timestamptz;
    id := page -> 'next_before' ->> 'run_id';
    IF pages > 1000 THEN
      problems := problems || 'runaway paging'::text;
      EXIT;
    END IF;
  END LOOP;
END
$$;

-------------------------------------------------------------------------------
-- Paging through a whole set
-------------------------------------------------------------------------------

SELECT is(cardinality(pg_temp.expected('system')), 25, 'fixture: 25 runs');
SELECT is((pg_temp.page_all('system', 4)).ids, pg_temp.expected('system'),
          'system, pages of 4: every run once, newest first, no gaps');
SELECT is((pg_temp.page_all('system', 4)).pages, 7, 'system, pages of 4: 7 pages');
SELECT is((pg_temp.page_all('system', 4)).flags, '{t,t,t,t,t,t,f}'::boolean[],
          'system, pages of 4: has_more on every page but the last');
SELECT is((pg_temp.page_all('system', 4)).problems, '{}'::text[],
          'system, pages of 4: page invariants hold');
SELECT is((pg_temp.page_all('system', 5)).flags, '{t,t,t,t,f}'::boolean[],
          'pages of 5 over 25 runs: the fifth page is full and has_more is false');
SELECT is((pg_temp.page_all('system', 5)).ids, pg_temp.expected('system'),
          'pages of 5: every run once');
SELECT is((pg_temp.page_all('system', 1)).ids, pg_temp.expected('system'),
          'pages of 1: every run once, across started_at ties');
SELECT is((pg_temp.page_all('system', 1)).pages, 25, 'pages of 1: 25 pages');
SELECT is((pg_temp.page_all('system', 1)).problems, '{}'::text[],
          'pages of 1: page invariants hold');
SELECT is((pg_temp.page_all('system', 24)).flags, '{t,f}'::boolean[],
          'pages of 24: one more row is has_more');
SELECT is((pg_temp.page_all('system', 25)).flags, '{f}'::boolean[],
          'a page of exactly all rows has no more');
SELECT is((pg_temp.page_all('system', 10000)).ids, pg_temp.expected('system'),
          'page_limit 10000: everything on one page');
SELECT is((pg_temp.page_all('system', 10000)).flags, '{f}'::boolean[],
          'page_limit 10000: has_more false');
SELECT is((pg_temp.page_all('system', 3)).ids[21:25],
          ARRAY['lr-n01', 'lr-b02', 'lr-a02', 'lr-b01', 'lr-a01'],
          'the oldest five: started_at DESC, then run_id DESC within a tie');

-- Cursors are exclusive and compare (started_at, run_id) as a pair.
SELECT is(docket.list_runs('system', 2, '2030-01-01T00:02:00Z', 'lr-b02'),
          jsonb_build_object(
            'entries', jsonb_build_array(
              (docket.list_runs('system', 10000) -> 'entries') -> 22,
              (docket.list_runs('system', 10000) -> 'entries') -> 23),
            'next_before', jsonb_build_object('started_at', timestamptz '2030-01-01T00:01:00Z',
                                              'run_id', 'lr-b01'),
            'has_more', true),
          'a cursor inside a started_at tie continues with the smaller run ids of that tie');
SELECT is(ARRAY(SELECT e ->> 'run_id' FROM jsonb_array_elements(
                  docket.list_runs('system', 10, '2030-01-01T00:02:00Z', 'lr-b') -> 'entries') e),
          ARRAY['lr-a02', 'lr-b01', 'lr-a01'],
          'a cursor run id need not exist: (T+2, lr-b) is between lr-a02 and lr-b02');
SELECT is(docket.list_runs('system', 10, '2030-01-01T00:01:00Z', 'lr-a01'),
          jsonb_build_object('entries', '[]'::jsonb,
                             'next_before', jsonb_build_object(
                               'started_at', timestamptz '2030-01-01T00:01:00Z', 'run_id', 'lr-a01'),
                             'has_more', false),
          'after the oldest run: an empty page that keeps the cursor');
SELECT is(docket.list_runs('system', 3, '2029-06-01T12:00:00.123456Z', 'zzz'),
          jsonb_build_object('entries', '[]'::jsonb,
                             'next_before', jsonb_build_object(
                               'started_at', timestamptz '2029-06-01T12:00:00.123456Z',
                               'run_id', 'zzz'),
                             'has_more', false),
          'an empty page keeps the supplied cursor, microseconds included');
SELECT is(docket.list_runs('tenant:nobody', 5),
          '{"entries": [], "next_before": null, "has_more": false}'::jsonb,
          'no rows and no cursor: next_before is JSON null');
SELECT is(docket.list_runs('tenant:b', 5, graph_id => 'lr-none'),
          '{"entries": [], "next_before": null, "has_more": false}'::jsonb,
          'no matching rows is success, not an error');
SELECT is(jsonb_array_length(docket.list_runs('system', 10, '2031-01-01T00:00:00Z', 'a') -> 'entries'),
          10, 'a cursor newer than every run starts at the newest');

-------------------------------------------------------------------------------
-- Shapes
-------------------------------------------------------------------------------

SELECT is(ARRAY(SELECT jsonb_object_keys(docket.list_runs('system', 2)) ORDER BY 1),
          ARRAY['entries', 'has_more', 'next_before'], 'a page has exactly three keys');
SELECT is((SELECT count(*) FROM jsonb_array_elements(docket.list_runs('system', 100) -> 'entries') e
            WHERE ARRAY(SELECT jsonb_object_keys(e) ORDER BY 1) =
                  ARRAY['checkpoint_seq', 'graph_hash', 'graph_id', 'run_id', 'started_at',
                        'status', 'tenant_id', 'updated_at']),
          25::bigint, 'every summary has exactly the eight keys');
SELECT is((SELECT count(*)
             FROM jsonb_array_elements(docket.list_runs('system', 100) -> 'entries') e
             JOIN docket.runs r ON r.run_id = e ->> 'run_id'
            WHERE r.tenant_id IS NOT DISTINCT FROM e ->> 'tenant_id'
              AND r.graph_id = e ->> 'graph_id' AND r.graph_hash = e ->> 'graph_hash'
              AND r.status = e ->> 'status'
              AND jsonb_typeof(e -> 'checkpoint_seq') = 'number'
              AND r.checkpoint_seq = (e ->> 'checkpoint_seq')::bigint
              AND r.started_at = (e ->> 'started_at')::timestamptz
              AND r.updated_at = (e ->> 'updated_at')::timestamptz),
          25::bigint, 'every summary carries the run''s stored columns');
SELECT is((SELECT count(*) FROM jsonb_array_elements(docket.list_runs('tenantless', 100) -> 'entries') e
            WHERE e -> 'tenant_id' = 'null'::jsonb),
          6::bigint, 'a tenantless summary has tenant_id JSON null, not a missing key');
SELECT ok(position('doc-only' IN docket.list_runs('system', 100)::text) = 0,
          'no document field leaks into a summary');
SELECT is(docket.list_runs('tenant:b', 1) -> 'next_before',
          jsonb_build_object('started_at', (docket.list_runs('tenant:b', 1) -> 'entries' -> 0 -> 'started_at'),
                             'run_id', 'lr-b05'),
          'next_before is the last entry''s (started_at, run_id)');
SELECT is(jsonb_typeof(docket.list_runs('tenant:b', 1) -> 'has_more'), 'boolean',
          'has_more is a JSON boolean');

-------------------------------------------------------------------------------
-- Scopes
-------------------------------------------------------------------------------

SELECT is((pg_temp.page_all('tenant:a', 5)).ids, pg_temp.expected('tenant:a'),
          'tenant:a pages through its own runs');
SELECT is(cardinality((pg_temp.page_all('tenant:a', 5)).ids), 12,
          'tenant:a sees its 12 runs, not tenant a:x''s');
SELECT is((SELECT count(*) FROM jsonb_array_elements(docket.list_runs('tenant:a', 100) -> 'entries') e
            WHERE e ->> 'tenant_id' IS DISTINCT FROM 'a'),
          0::bigint, 'tenant:a never sees another tenant''s run');
SELECT is((pg_temp.page_all('tenant:b', 2)).ids, ARRAY['lr-b05', 'lr-b04', 'lr-b03', 'lr-b02', 'lr-b01'],
          'tenant:b sees exactly its five runs, though tenant a has runs at the same times');
SELECT is((pg_temp.page_all('tenant:a:x', 1)).ids, ARRAY['lr-x02', 'lr-x01'],
          'a tenant id with a colon is its own tenant');
SELECT is((pg_temp.page_all('tenantless', 4)).ids,
          ARRAY['lr-n06', 'lr-n05', 'lr-n04', 'lr-n03', 'lr-n02', 'lr-n01'],
          'tenantless sees exactly the tenantless runs');
SELECT is((pg_temp.page_all('tenantless', 4)).flags, '{t,f}'::boolean[],
          'tenantless: has_more is counted within the scope');
SELECT is((pg_temp.page_all('tenant:b', 5)).flags, '{f}'::boolean[],
          'tenant:b, page of 5: no more, though other tenants have older runs');

-------------------------------------------------------------------------------
-- Filters
-------------------------------------------------------------------------------

SELECT is((pg_temp.page_all('tenant:a', 3, 'lr-g1')).ids,
          ARRAY['lr-a12', 'lr-a10', 'lr-a09', 'lr-a07', 'lr-a06', 'lr-a04', 'lr-a03', 'lr-a01'],
          'graph_id alone spans both hashes of the graph');
SELECT is((pg_temp.page_all('tenant:a', 3, gh => 'lr-h1')).ids,
          ARRAY['lr-a12', 'lr-a11', 'lr-a09', 'lr-a08', 'lr-a06', 'lr-a05', 'lr-a03', 'lr-a02'],
          'graph_hash alone spans graphs that share the hash');
SELECT is((pg_temp.page_all('tenant:a', 3, 'lr-g1', 'lr-h1')).ids,
          ARRAY['lr-a12', 'lr-a09', 'lr-a06', 'lr-a03'], 'graph_id and graph_hash together');
SELECT is((pg_temp.page_all('tenant:a', 2, sts => '{waiting,failed}')).ids,
          ARRAY['lr-a11', 'lr-a08', 'lr-a06', 'lr-a03', 'lr-a01'],
          'statuses: any of the listed statuses, in page order across statuses');
SELECT is((pg_temp.page_all('tenant:a', 2, sts => '{waiting,failed}')).flags,
          '{t,t,f}'::boolean[], 'statuses: has_more across statuses');
SELECT is((pg_temp.page_all('tenant:a', 10, sts => '{running}')).ids,
          ARRAY['lr-a10', 'lr-a05'], 'statuses: a single status');
SELECT is((pg_temp.page_all('tenant:a', 1, sts => '{running,running}')).ids,
          ARRAY['lr-a10', 'lr-a05'], 'statuses: a repeated status does not repeat rows');
SELECT is((pg_temp.page_all('tenant:a', 4, sts => '{cancelled,failed,completed,waiting,running}')).ids,
          pg_temp.expected('tenant:a'), 'statuses: all five statuses is every run');
SELECT is((pg_temp.page_all('tenant:a', 1, 'lr-g1', 'lr-h1', '{completed,cancelled}')).ids,
          ARRAY['lr-a12', 'lr-a09'], 'graph_id, graph_hash and statuses together');
SELECT is((pg_temp.page_all('system', 3, gh => 'lr-h2', sts => '{waiting}')).ids,
          pg_temp.expected('system', NULL, 'lr-h2', '{waiting}'), 'system: graph_hash and statuses');
SELECT is((pg_temp.page_all('tenant:b', 2, 'lr-g1')).ids, pg_temp.expected('tenant:b', 'lr-g1'),
          'tenant:b with a graph filter sees only its own runs of the graph');
SELECT is(docket.list_runs('tenant:a', 10, graph_id => 'lr-g1', graph_hash => 'lr-none') -> 'entries',
          '[]'::jsonb, 'a hash the graph does not have matches nothing');

-- Every combination of scope, filters and page size against the oracle.
SELECT is_empty($$
  SELECT s.scope, g.gid, h.gh, t.sts, z.size
    FROM unnest(ARRAY['system', 'tenantless', 'tenant:a', 'tenant:b', 'tenant:a:x',
                      'tenant:nobody']) s (scope),
         unnest(ARRAY[NULL, 'lr-g1', 'lr-g2', 'lr-none']) g (gid),
         unnest(ARRAY[NULL, 'lr-h1', 'lr-h2']) h (gh),
         (VALUES (NULL::text[]), ('{running}'), ('{waiting,completed}'),
                 ('{failed,cancelled,running}')) t (sts),
         unnest(ARRAY[1, 2, 7]) z (size),
         LATERAL pg_temp.page_all(s.scope, z.size, g.gid, h.gh, t.sts) p
   WHERE p.ids IS DISTINCT FROM pg_temp.expected(s.scope, g.gid, h.gh, t.sts)
      OR p.problems <> '{}'
      OR p.pages <> greatest(1, ceil(cardinality(p.ids)::numeric / z.size))
$$, 'every scope x filter combination x page size pages exactly through the oracle''s rows');

-------------------------------------------------------------------------------
-- Summaries follow commits
-------------------------------------------------------------------------------

DO $fixture$
DECLARE
  token uuid;
BEGIN
  SELECT claim_token INTO token
    FROM docket.claim_due(now => '2030-01-01T00:00:00Z', claim_limit => 100)
   WHERE run_id = 'lr-a10';
  PERFORM docket.commit('tenant:a', docket.fetch_run('tenant:a', 'lr-a10')
                          || '{"status": "completed", "checkpoint_seq": 1}',
                        0, token, 'run_completed', 'terminal');
END
$fixture$;
SELECT is(docket.list_runs('tenant:a', 1, statuses => '{running}') -> 'entries' -> 0 ->> 'run_id',
          'lr-a05', 'a committed status change leaves the old status''s list');
SELECT is((docket.list_runs('tenant:a', 1, '2030-01-01T00:11:00Z', 'lr-a11') -> 'entries' -> 0)
            - 'updated_at' - 'started_at',
          '{"run_id": "lr-a10", "tenant_id": "a", "graph_id": "lr-g1", "graph_hash": "lr-h2",
            "status": "completed", "checkpoint_seq": 1}'::jsonb,
          'the summary shows the committed status and checkpoint_seq');
SELECT is((docket.list_runs('tenant:a', 1, '2030-01-01T00:11:00Z', 'lr-a11') -> 'entries' -> 0
            ->> 'updated_at')::timestamptz,
          (SELECT updated_at FROM docket.runs WHERE run_id = 'lr-a10'),
          'the summary shows the committed updated_at');

-------------------------------------------------------------------------------
-- Bad arguments: 22023 (the domain check for a malformed scope)
-------------------------------------------------------------------------------

SELECT throws_ok($$SELECT docket.list_runs(NULL, 10)$$, '22023',
                 'bad_argument: scope must not be NULL', 'NULL scope');
SELECT throws_ok($$SELECT docket.list_runs('system', NULL)$$, '22023',
                 'bad_argument: page_limit must not be NULL', 'NULL page_limit');
SELECT throws_ok($$SELECT docket.list_runs('system', 0)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'page_limit 0');
SELECT throws_ok($$SELECT docket.list_runs('system', -1)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'page_limit -1');
SELECT throws_ok($$SELECT docket.list_runs('system', (-2147483648)::int)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'page_limit INT_MIN');
SELECT throws_ok($$SELECT docket.list_runs('system', 10001)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'page_limit 10001');
SELECT throws_ok($$SELECT docket.list_runs('system', 2147483647)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'page_limit INT_MAX');
SELECT lives_ok($$SELECT docket.list_runs('system', 1)$$, 'page_limit 1 is allowed');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, before_started_at => '2030-01-01T00:00:00Z')$$,
                 '22023',
                 'bad_argument: before_started_at and before_run_id must be given together or not at all',
                 'a cursor without before_run_id');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, before_run_id => 'lr-a01')$$, '22023',
                 'bad_argument: before_started_at and before_run_id must be given together or not at all',
                 'a cursor without before_started_at');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, 'infinity', 'lr-a01')$$, '22023',
                 'bad_argument: timestamps must be finite', 'an infinite cursor');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{}')$$, '22023',
                 'bad_argument: statuses must not be empty', 'empty statuses');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{NULL}')$$, '22023',
                 'bad_argument: statuses[1] must not be NULL', 'statuses {NULL}');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{running,NULL}')$$, '22023',
                 'bad_argument: statuses[2] must not be NULL', 'a NULL among statuses');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{created}')$$, '22023',
                 'bad_argument: statuses[1] "created" is not a durable status (running, waiting, completed, failed, cancelled)',
                 'created is never stored, so never listed');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{running,Running}')$$, '22023',
                 'bad_argument: statuses[2] "Running" is not a durable status (running, waiting, completed, failed, cancelled)',
                 'statuses are case-sensitive');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{""}')$$, '22023',
                 'bad_argument: statuses[1] "" is not a durable status (running, waiting, completed, failed, cancelled)',
                 'an empty status');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, statuses => '{{running},{waiting}}')$$, '22023',
                 'bad_argument: statuses must be a one-dimensional array', 'a two-dimensional array');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, graph_id => '')$$, '22023',
                 'bad_argument: graph_id must not be empty', 'an empty graph_id');
SELECT throws_ok($$SELECT docket.list_runs('system', 10, graph_hash => '')$$, '22023',
                 'bad_argument: graph_hash must not be empty', 'an empty graph_hash');
SELECT throws_ok($$SELECT docket.list_runs('tenant:', 10)$$, '23514', NULL,
                 'a malformed scope is the domain check violation');

SELECT * FROM finish();
ROLLBACK;
