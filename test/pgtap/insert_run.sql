-- docket.insert_run: storing an initialized run under an owner scope.
BEGIN;
SELECT plan(84);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

SET LOCAL TimeZone = 'UTC';
SET LOCAL docket.fake_now = '2040-04-01 12:00:00+00';

\ir lib/err.sql

-- A valid initialized run document, with `patch` merged over it.
CREATE FUNCTION pg_temp.doc(id text, patch jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'tap-ir', 'graph_hash', 'h1',
                            'status', 'running', 'checkpoint_seq', 0,
                            'started_at', '2040-04-01T11:00:00Z') || patch $$;

-- insert_run with a document, returning the error ('SQLSTATE message' or 'no error').
CREATE FUNCTION pg_temp.ins_err(run jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.err(format('SELECT docket.insert_run(%L, %L::jsonb, %L, %L)',
                            'tenant:acme', run, 'run_initialized', '2040-04-01 12:00:00+00')) $$;

-- Every run row of this file, as text (ctid included: an UPDATE would move it).
CREATE FUNCTION pg_temp.runs() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(r.ctid::text || ' ' || r::text, ' | ' ORDER BY run_id), '')
  FROM docket.runs r WHERE run_id LIKE 'ir-%' $$;

-- The columns of one run, as jsonb.
CREATE FUNCTION pg_temp.cols(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) - 'document' - 'event_seq' - 'completed_seq' - 'completed_at' - 'claimed_seq' - 'claimed_attempt' FROM docket.runs r WHERE run_id = id $$;

\o /dev/null
SELECT docket.save_graph('tap-ir', 'h1', '{"nodes": []}');
SELECT docket.save_graph('tap-ir', 'h2', '{"nodes": ["x"]}');
\o

-------------------------------------------------------------------------------
-- Success: the stored row
-------------------------------------------------------------------------------
SELECT is(docket.insert_run('tenant:acme',
            pg_temp.doc('ir-1', '{"extra": {"b": [1, 2], "a": null}, "tenant_id": "evil", "tenant": "evil"}'),
            'run_initialized', '2040-04-01 13:00:00+00'),
          pg_temp.doc('ir-1', '{"extra": {"b": [1, 2], "a": null}, "tenant_id": "evil", "tenant": "evil"}'),
          'insert_run returns the stored document, verbatim');
SELECT is((SELECT document FROM docket.runs WHERE run_id = 'ir-1'),
          pg_temp.doc('ir-1', '{"extra": {"b": [1, 2], "a": null}, "tenant_id": "evil", "tenant": "evil"}'),
          'the document is stored verbatim (unknown keys kept)');
SELECT is(pg_temp.cols('ir-1'),
          jsonb_build_object(
            'run_id', 'ir-1', 'tenant_id', 'acme', 'queue', 'default',
            'graph_id', 'tap-ir', 'graph_hash', 'h1', 'status', 'running',
            'checkpoint_seq', 0, 'checkpoint_type', 'run_initialized',
            'started_at', '2040-04-01T11:00:00+00:00', 'updated_at', '2040-04-01T12:00:00+00:00',
            'wake_at', '2040-04-01T13:00:00+00:00', 'claim_token', NULL, 'claimed_at', NULL,
            'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
            'deadline_at', NULL, 'claim_started_at', NULL, 'claim_renewed_at', NULL, 'lease_ms', NULL),
          'columns: tenant from the owner scope (never the document), default queue, fields from the document, updated_at = docket.now(), no claim, zero counters, no poison');

SELECT lives_ok($$SELECT docket.insert_run('tenantless', pg_temp.doc('ir-2', '{"tenant_id": "acme"}'),
                                           'run_initialized', '2040-04-01 11:30:00+00', 'q-ir')$$,
                'a tenantless owner inserts');
SELECT is((SELECT tenant_id FROM docket.runs WHERE run_id = 'ir-2'), NULL,
          'tenantless stores a NULL tenant even when the document names one');
SELECT is((SELECT queue FROM docket.runs WHERE run_id = 'ir-2'), 'q-ir', 'the queue argument is stored');
SELECT is((SELECT wake_at FROM docket.runs WHERE run_id = 'ir-2'), '2040-04-01 11:30:00+00'::timestamptz,
          'a past wake_at is stored as given (the run is due at once)');

SELECT lives_ok($$SELECT docket.insert_run('tenant:org:team:1', pg_temp.doc('ir-3'),
                                           'run_initialized', '2040-04-01 12:00:00+00')$$,
                'a tenant id may contain colons');
SELECT is((SELECT tenant_id FROM docket.runs WHERE run_id = 'ir-3'), 'org:team:1',
          'the tenant id is everything after the first "tenant:"');

SELECT lives_ok($$SELECT docket.insert_run('tenant:acme',
    pg_temp.doc('ir-4', '{"status": "waiting", "checkpoint_seq": 7, "started_at": "2040-04-01T13:30:00.123456+02:00", "updated_at": "2001-01-01T00:00:00Z"}'),
    'run_initialized', '2040-05-01 00:00:00+00')$$,
  'a waiting run with a later first sequence, an offset start time and its own updated_at inserts');
SELECT is((SELECT jsonb_build_object('status', status, 'checkpoint_seq', checkpoint_seq,
                                     'started_at', started_at, 'updated_at', updated_at)
           FROM docket.runs WHERE run_id = 'ir-4'),
          jsonb_build_object('status', 'waiting', 'checkpoint_seq', 7,
                             'started_at', '2040-04-01 11:30:00.123456+00'::timestamptz,
                             'updated_at', '2040-04-01 12:00:00+00'::timestamptz),
          'status and sequence from the document, started_at at microsecond precision with its offset applied, updated_at from the store clock (not the document)');

SET LOCAL docket.fake_now = '2040-04-02 08:00:00+00';
SELECT lives_ok($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-5', '{"graph_hash": "h2"}'),
                                           'run_initialized', '2040-04-02 09:00:00+00')$$,
                'a run of another saved version inserts');
SELECT is((SELECT updated_at FROM docket.runs WHERE run_id = 'ir-5'), '2040-04-02 08:00:00+00'::timestamptz,
          'updated_at follows docket.fake_now');
SELECT is((SELECT graph_hash FROM docket.runs WHERE run_id = 'ir-5'), 'h2', 'any saved version may be referenced');

SELECT lives_ok($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-6'), 'run_initialized',
                                           '2040-04-02 08:00:00+00', repeat('q', 128))$$,
                'a queue name of exactly 128 bytes is accepted');
SELECT lives_ok($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-7', '{"status": "completed"}'),
                                           'run_initialized', '2040-04-02 08:00:00+00')$$,
                'any durable status may be inserted');
SELECT lives_ok($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-8'), 'run_initialized',
                                           '2040-04-03 00:00:00+00', 'q-ir-future')$$,
                'a run with a future first wake inserts');

-------------------------------------------------------------------------------
-- Errors: nothing is written
-------------------------------------------------------------------------------
SELECT pg_temp.runs() AS before_errors \gset

-- Arguments.
SELECT alike(pg_temp.err($$SELECT docket.insert_run(NULL, pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '22023 bad_argument: %', 'NULL owner_scope raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('system', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '22023 bad_argument: %', 'the system scope is not an owner scope (22023)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('acme', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '23514 %', 'malformed scope text raises the domain check (23514)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '23514 %', 'tenant: without an id raises the domain check (23514)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('Tenantless', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '23514 %', 'scope words are case-sensitive (23514)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', NULL, 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '22023 bad_argument: %', 'NULL run raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), NULL, '2040-04-02 08:00:00+00')$$),
             '22023 bad_argument: %', 'NULL checkpoint_type raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'node_completed', '2040-04-02 08:00:00+00')$$),
             'DK007 invalid_run: %', 'a checkpoint_type other than run_initialized raises DK007');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_completed', '2040-04-02 08:00:00+00')$$),
             'DK007 invalid_run: %', 'run_completed is not an initializing checkpoint either (DK007)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'nope', '2040-04-02 08:00:00+00')$$),
             '22P02 %', 'an unknown checkpoint_type label is rejected by the enum (22P02)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', NULL)$$),
             '22023 bad_argument: %', 'NULL wake_at raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', 'infinity')$$),
             '22023 bad_argument: %', 'an infinite wake_at raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00', NULL)$$),
             '22023 bad_argument: %', 'NULL queue raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00', '')$$),
             '22023 bad_argument: %', 'an empty queue raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00', repeat('q', 129))$$),
             '22023 bad_argument: %', 'a queue of 129 bytes raises 22023');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:acme', pg_temp.doc('ir-x'), 'run_initialized', '2040-04-02 08:00:00+00', repeat('€', 43))$$),
             '22023 bad_argument: %', 'the queue limit counts bytes: 43 three-byte characters raise 22023');

-- Document shape (DK007).
SELECT alike(pg_temp.ins_err('[]'), 'DK007 invalid_run: %', 'an array document raises DK007');
SELECT alike(pg_temp.ins_err('"run"'), 'DK007 invalid_run: %', 'a string document raises DK007');
SELECT alike(pg_temp.ins_err('42'), 'DK007 invalid_run: %', 'a number document raises DK007');
SELECT alike(pg_temp.ins_err('null'), 'DK007 invalid_run: %', 'a JSON null document raises DK007');
SELECT alike(pg_temp.ins_err('{}'), 'DK007 invalid_run: %', 'an empty object raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'id'), 'DK007 invalid_run: %', 'a document without id raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'graph_id'), 'DK007 invalid_run: %', 'a document without graph_id raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'graph_hash'), 'DK007 invalid_run: %', 'a document without graph_hash raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'status'), 'DK007 invalid_run: %', 'a document without status raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'checkpoint_seq'), 'DK007 invalid_run: %', 'a document without checkpoint_seq raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x') - 'started_at'), 'DK007 invalid_run: %', 'a document without started_at raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"id": 17}')), 'DK007 invalid_run: %', 'a numeric id raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"id": ""}')), 'DK007 invalid_run: %', 'an empty id raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"id": null}')), 'DK007 invalid_run: %', 'a JSON null id raises DK007');
-- Ids are at most 255 bytes each (run id, graph_id, graph_hash), refused as an
-- invalid run rather than by an index: random text does not compress, so a long
-- random id used to fail with the index's 54000 instead.
CREATE FUNCTION pg_temp.noise(n int) RETURNS text LANGUAGE sql AS $$
  SELECT left(string_agg(md5(g::text), '' ORDER BY g), n) FROM generate_series(1, n / 32 + 1) g $$;
SELECT is(pg_temp.err(format('SELECT docket.insert_run(%L, %L::jsonb, %L, %L)', 'tenant:acme',
                             pg_temp.doc('irlong-' || pg_temp.noise(248)), 'run_initialized', '2040-04-01 12:00:00+00')),
          'no error', 'a random run id of exactly 255 bytes is stored');
SELECT is(pg_temp.ins_err(pg_temp.doc('irlong-' || pg_temp.noise(249))),
          'DK007 invalid_run: run "id" is 256 bytes, over 255', 'a run id of 256 bytes raises DK007, naming the limit');
SELECT is(pg_temp.ins_err(pg_temp.doc('irlong-' || pg_temp.noise(3000))),
          'DK007 invalid_run: run "id" is 3007 bytes, over 255', 'a random run id of 3007 bytes raises DK007, not the index''s 54000');
SELECT is(pg_temp.ins_err(pg_temp.doc('ir-x', jsonb_build_object('graph_id', pg_temp.noise(256)))),
          'DK007 invalid_run: run "graph_id" is 256 bytes, over 255', 'a graph_id of 256 bytes raises DK007');
SELECT is(pg_temp.ins_err(pg_temp.doc('ir-x', jsonb_build_object('graph_hash', repeat('é', 128)))),
          'DK007 invalid_run: run "graph_hash" is 256 bytes, over 255', 'the graph_hash limit counts bytes: 128 two-byte characters raise DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"graph_id": ["tap-ir"]}')), 'DK007 invalid_run: %', 'an array graph_id raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"graph_hash": 1}')), 'DK007 invalid_run: %', 'a numeric graph_hash raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": "3"}')), 'DK007 invalid_run: %', 'checkpoint_seq "3" (a string) raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": 1.5}')), 'DK007 invalid_run: %', 'checkpoint_seq 1.5 raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": -1}')), 'DK007 invalid_run: %', 'checkpoint_seq -1 raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": 1e30}')), 'DK007 invalid_run: %', 'a checkpoint_seq beyond bigint raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": null}')), 'DK007 invalid_run: %', 'a JSON null checkpoint_seq raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"checkpoint_seq": true}')), 'DK007 invalid_run: %', 'a boolean checkpoint_seq raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"started_at": "yesterday"}')), 'DK007 invalid_run: %', 'started_at that is not a timestamp raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"started_at": "2040-04-01T11:00:00"}')), 'DK007 invalid_run: %', 'started_at without an offset raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"started_at": "2040-02-30T11:00:00Z"}')), 'DK007 invalid_run: %', 'started_at on a date that does not exist raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"started_at": 1712000000}')), 'DK007 invalid_run: %', 'a numeric started_at raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"updated_at": "later"}')), 'DK007 invalid_run: %', 'an updated_at that is not a timestamp raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"status": "created"}')), 'DK007 invalid_run: %', 'the transient status created raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"status": "bogus"}')), 'DK007 invalid_run: %', 'an unknown status raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"status": "Running"}')), 'DK007 invalid_run: %', 'statuses are case-sensitive (DK007)');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"status": 1}')), 'DK007 invalid_run: %', 'a numeric status raises DK007');

-- The graph must be saved.
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"graph_hash": "h3"}')), 'DK007 invalid_run: %',
             'an unsaved graph version (known id, unknown hash) raises DK007');
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-x', '{"graph_id": "tap-unknown"}')), 'DK007 invalid_run: %',
             'an unknown graph raises DK007');

-- Duplicate run ids, in any scope.
SELECT alike(pg_temp.ins_err(pg_temp.doc('ir-1')), '23505 duplicate_run: %',
             'a duplicate run id raises 23505 with duplicate_run');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenant:other', pg_temp.doc('ir-1', '{"graph_hash": "h2", "status": "waiting"}'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '23505 duplicate_run: %', 'run ids are global: another tenant cannot reuse one (23505)');
SELECT alike(pg_temp.err($$SELECT docket.insert_run('tenantless', pg_temp.doc('ir-3'), 'run_initialized', '2040-04-02 08:00:00+00')$$),
             '23505 duplicate_run: %', 'the tenantless scope cannot reuse a tenant''s run id (23505)');

SELECT is(pg_temp.runs(), :'before_errors', 'no failed insert wrote or changed any row');
SELECT is((SELECT count(*)::int FROM docket.runs WHERE run_id = 'ir-x'), 0, 'the rejected run does not exist');

-------------------------------------------------------------------------------
-- Scope of the stored run
-------------------------------------------------------------------------------
SELECT is(docket.fetch_run('tenant:acme', 'ir-1'), pg_temp.doc('ir-1', '{"extra": {"b": [1, 2], "a": null}, "tenant_id": "evil", "tenant": "evil"}'),
          'the owner scope reads the inserted run');
SELECT is(docket.fetch_run('tenant:evil', 'ir-1'), NULL, 'the tenant named in the document cannot read it');
SELECT is(docket.fetch_run('tenantless', 'ir-1'), NULL, 'the tenantless scope cannot read a tenant''s run');
SELECT is(docket.fetch_run('tenant:acme', 'ir-2'), NULL, 'a tenant cannot read a tenantless run');
SELECT is(docket.fetch_run('system', 'ir-2'), pg_temp.doc('ir-2', '{"tenant_id": "acme"}'), 'the system scope reads every run');

-- A run inserted due now is claimable; one with a future wake is not yet.
SELECT is((SELECT array_agg(run_id ORDER BY run_id) FROM docket.claim_due(now => '2040-04-01 12:30:00+00', claim_limit => 10, queue => 'q-ir')),
          ARRAY['ir-2'], 'a run inserted with a due wake_at is claimable in its queue');
SELECT is((SELECT count(*)::int FROM docket.claim_due(now => '2040-04-02 23:59:59.999999+00', claim_limit => 10, queue => 'q-ir-future')),
          0, 'a run whose wake_at is in the future is not claimable before it');
SELECT is((SELECT array_agg(run_id) FROM docket.claim_due(now => '2040-04-03 00:00:00+00', claim_limit => 10, queue => 'q-ir-future')),
          ARRAY['ir-8'], 'it is claimable at its wake_at');

SELECT * FROM finish();
ROLLBACK;
