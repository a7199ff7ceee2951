
-------------------------------------------------------------------------------
-- Hostile input found by the bad-input sweep (issue 8; test/pgtap/bad_input.sql).
-- This piece sorts before 99_roles.sql, which turns both functions into their
-- guarded wrapper and _impl body.
--  - bind_tenant bound a role OID that names no role (a numeric regrole such as
--    4294967294 or '-' is not checked by the type): the row bound nobody. It
--    is refused with 22023, as a superuser is.
--  - cleanup with a horizon reaching before the earliest timestamp (older_than
--    => '178000000 years') raised 22008 (timestamp out of range) from
--    docket.now() - older_than: nothing is that old, so it deletes nothing.
-------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION docket.bind_tenant(role regrole, tenant text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  superuser boolean;
BEGIN
  IF role IS NULL THEN
    RAISE EXCEPTION 'bad_argument: role must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF tenant IS NULL OR tenant = '' OR octet_length(tenant) > 1000 THEN
    RAISE EXCEPTION 'bad_argument: tenant must be non-empty text of at most 1000 bytes'
      USING ERRCODE = '22023';
  END IF;
  SELECT r.rolsuper INTO superuser FROM pg_catalog.pg_roles r WHERE r.oid = role;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'bad_argument: role % does not exist', role::oid USING ERRCODE = '22023';
  END IF;
  IF superuser THEN
    RAISE EXCEPTION 'bad_argument: role % is a superuser, which no binding restricts', role
      USING ERRCODE = '22023';
  END IF;
  INSERT INTO docket.tenant_bindings AS b (role, tenant, bound_at)
  VALUES (bind_tenant.role, bind_tenant.tenant, docket.now())
  ON CONFLICT ON CONSTRAINT tenant_bindings_pkey DO NOTHING;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION docket.bind_tenant(regrole, text) IS
  'Binds role to tenant (operator only; a bound caller gets 42501): from then on the role, and every role that inherits it, may only use tenant:<t> scopes of its bound tenants (any other scope raises 42501 and changes nothing), claims only their runs, and emits and spawns only into them. True when the binding is new, false when it existed. A superuser, or an OID that names no role, cannot be bound (22023). Takes effect for calls that start after it commits.';

CREATE OR REPLACE FUNCTION docket.cleanup(older_than interval, batch int DEFAULT 1000) RETURNS bigint
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  cutoff timestamptz;
  deleted bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    RAISE EXCEPTION 'bad_argument: older_than must be a non-negative interval' USING ERRCODE = '22023';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 100000 THEN
    RAISE EXCEPTION 'bad_argument: batch must be between 1 and 100000' USING ERRCODE = '22023';
  END IF;
  BEGIN
    cutoff := docket.now() - older_than;
  EXCEPTION WHEN datetime_field_overflow THEN
    -- A horizon before the earliest timestamp: nothing is that old.
    cutoff := '-infinity';
  END;
  -- Finished runs (with their task row, steps, waits and run events, by cascade);
  -- rows a worker or operator holds are skipped, not waited for.
  DELETE FROM docket.runs x
   WHERE x.run_id = ANY (ARRAY(
     SELECT y.run_id FROM docket.runs y
      WHERE y.status IN ('completed', 'failed', 'cancelled') AND y.updated_at < cutoff
      ORDER BY y.updated_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED));
  GET DIAGNOSTICS deleted = ROW_COUNT;
  -- Emitted events past the horizon (their waiters are long gone).
  DELETE FROM docket.task_events e
   WHERE e.ctid = ANY (ARRAY(
     SELECT f.ctid FROM docket.task_events f
      WHERE f.emitted_at < cutoff
      ORDER BY f.emitted_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED));
  RETURN deleted;
END $$;
