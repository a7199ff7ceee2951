-- docket.save_graph: publishing graph versions, idempotent per (graph_id, graph_hash).
BEGIN;
SELECT plan(27);

SET LOCAL TimeZone = 'UTC';
SET LOCAL docket.fake_now = '2040-03-01 10:00:00+00';

\ir lib/err.sql

CREATE FUNCTION pg_temp.graphs() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(g::text, ' | ' ORDER BY graph_id, graph_hash), '')
  FROM docket.graphs g WHERE graph_id LIKE 'tap-g%' $$;

-- A new version.
SELECT lives_ok($$SELECT docket.save_graph('tap-g1', 'h1', '{"nodes": ["a", "b"], "n": 1}')$$,
                'save_graph publishes a new graph version');
SELECT is((SELECT definition FROM docket.graphs WHERE graph_id = 'tap-g1' AND graph_hash = 'h1'),
          '{"nodes": ["a", "b"], "n": 1}'::jsonb, 'the definition is stored');
SELECT is((SELECT saved_at FROM docket.graphs WHERE graph_id = 'tap-g1' AND graph_hash = 'h1'),
          '2040-03-01 10:00:00+00'::timestamptz, 'saved_at comes from docket.now() (docket.fake_now)');
SELECT is(docket.save_graph('tap-g1', 'h1', '{"nodes": ["a", "b"], "n": 1}')::text, '',
          'save_graph returns void');

-- Idempotent: the same definition (jsonb equality, so key order and spacing do not matter).
SET LOCAL docket.fake_now = '2040-03-02 10:00:00+00';
SELECT pg_temp.graphs() AS before_same \gset
SELECT lives_ok($$SELECT docket.save_graph('tap-g1', 'h1', '{"n": 1,   "nodes": ["a","b"]}')$$,
                'saving the same definition again (other key order and spacing) is a no-op success');
SELECT is(pg_temp.graphs(), :'before_same',
          'an idempotent save changes nothing (not even saved_at)');
SELECT is((SELECT count(*)::int FROM docket.graphs WHERE graph_id = 'tap-g1'), 1,
          'still exactly one row for the key');

-- Another definition under the same key: graph_conflict, nothing changes.
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g1', 'h1', '{"nodes": ["a"], "n": 1}')$$),
             'DK006 graph_conflict: %', 'another definition under the same key raises graph_conflict (DK006)');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g1', 'h1', '{"nodes": ["b", "a"], "n": 1}')$$),
             'DK006 graph_conflict: %', 'array order is part of the definition (DK006)');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g1', 'h1', '{"nodes": ["a", "b"], "n": 1.5}')$$),
             'DK006 graph_conflict: %', 'a changed number is another definition (DK006)');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g1', 'h1', 'null')$$),
             'DK006 graph_conflict: %', 'a JSON null definition is another definition (DK006)');
SELECT is(pg_temp.graphs(), :'before_same', 'a conflicting save leaves the stored version as it was');

-- Versions are keyed by (graph_id, graph_hash).
SELECT lives_ok($$SELECT docket.save_graph('tap-g1', 'h2', '{"nodes": ["a"]}')$$,
                'the same graph_id with another hash is a new version');
SELECT lives_ok($$SELECT docket.save_graph('tap-g2', 'h1', '{"nodes": ["a", "b"], "n": 1}')$$,
                'another graph_id with the same hash is a new version');
SELECT is((SELECT count(*)::int FROM docket.graphs WHERE graph_id LIKE 'tap-g%'), 3,
          'three versions stored');
SELECT is((SELECT saved_at FROM docket.graphs WHERE graph_id = 'tap-g1' AND graph_hash = 'h2'),
          '2040-03-02 10:00:00+00'::timestamptz, 'each version records when it was saved');

-- Bad arguments: nothing is written.
SELECT pg_temp.graphs() AS before_bad \gset
SELECT alike(pg_temp.err($$SELECT docket.save_graph(NULL, 'h9', '{}')$$),
             '22023 bad_argument: %', 'NULL graph_id raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g9', NULL, '{}')$$),
             '22023 bad_argument: %', 'NULL graph_hash raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g9', 'h9', NULL)$$),
             '22023 bad_argument: %', 'NULL definition raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('', 'h9', '{}')$$),
             '22023 bad_argument: %', 'empty graph_id raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g9', '', '{}')$$),
             '22023 bad_argument: %', 'empty graph_hash raises 22023');
SELECT is(pg_temp.err($$SELECT docket.save_graph('tap-g9' || repeat('x', 250), 'h9', '{}')$$),
          '22023 bad_argument: graph_id is 256 bytes, over 255', 'a graph_id of 256 bytes raises 22023, naming the limit');
SELECT is(pg_temp.err($$SELECT docket.save_graph('tap-g9', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 100) g), '{}')$$),
          '22023 bad_argument: graph_hash is 3200 bytes, over 255', 'a random graph_hash of 3200 bytes raises 22023, not the index''s 54000');
SELECT alike(pg_temp.err($$SELECT docket.save_graph('tap-g9', 'h9', '{bad json')$$),
             '22P02 %', 'malformed JSON text is rejected by jsonb input (22P02)');
SELECT is(pg_temp.graphs(), :'before_bad', 'no bad call wrote anything');

SELECT is(pg_temp.err($$SELECT docket.save_graph('tap-g255-' || (SELECT left(string_agg(md5(g::text), ''), 246) FROM generate_series(1, 8) g), 'h1', '{}')$$),
          'no error', 'a random graph_id of exactly 255 bytes is saved');

-- A saved version is what a run may reference.
SELECT lives_ok($$SELECT docket.insert_run('tenantless',
  '{"id": "tap-sg-run", "graph_id": "tap-g1", "graph_hash": "h2", "status": "running",
    "checkpoint_seq": 0, "started_at": "2040-03-02T10:00:00Z"}', 'run_initialized',
  '2040-03-02 10:00:00+00')$$, 'a run can reference a saved version');

SELECT * FROM finish();
ROLLBACK;
