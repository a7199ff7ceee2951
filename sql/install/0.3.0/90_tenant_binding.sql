
-------------------------------------------------------------------------------
-- Tenant binding (issue 8; docs/security.md "Tenant binding"): a role bound to
-- tenants, directly or through a role it inherits, may only use tenant:<t>
-- scopes of its tenants and claims only their runs. Checked by the C code where
-- scopes are resolved (src/pg/caller.cpp).
-------------------------------------------------------------------------------

CREATE TABLE docket.tenant_bindings (
  role regrole NOT NULL,
  tenant text NOT NULL CHECK (tenant <> '' AND octet_length(tenant) <= 1000),
  bound_at timestamptz NOT NULL,
  CONSTRAINT tenant_bindings_pkey PRIMARY KEY (role, tenant)
);
COMMENT ON TABLE docket.tenant_bindings IS
  'Tenant bindings (docket.bind_tenant): a role bound here, directly or through a role it inherits, may only use tenant:<t> scopes of its tenants. Dumped with the extension (pg_extension_config_dump).';
REVOKE ALL ON docket.tenant_bindings FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('docket.tenant_bindings', '');

CREATE FUNCTION docket.bind_tenant(role regrole, tenant text) RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.bind_tenant(regrole, text) IS
  'Binds role to tenant (operator only; a bound caller gets 42501): from then on the role, and every role that inherits it, may only use tenant:<t> scopes of its bound tenants (any other scope raises 42501 and changes nothing), claims only their runs, and emits and spawns only into them. True when the binding is new, false when it existed. A superuser, or an OID that names no role, cannot be bound (22023). Takes effect for calls that start after it commits.';

CREATE FUNCTION docket._bind_tenant_impl(role regrole, tenant text) RETURNS boolean
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
  VALUES (_bind_tenant_impl.role, _bind_tenant_impl.tenant, docket.now())
  ON CONFLICT ON CONSTRAINT tenant_bindings_pkey DO NOTHING;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION docket._bind_tenant_impl(regrole, text) IS
  'Internal: the body of docket.bind_tenant, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.unbind_tenant(role regrole, tenant text) RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.unbind_tenant(regrole, text) IS
  'Removes the binding of role to tenant (operator only; a bound caller gets 42501): true when it existed. A role whose last binding is removed is unbound again: it may use every scope its docket roles allow.';

CREATE FUNCTION docket._unbind_tenant_impl(role regrole, tenant text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF role IS NULL OR tenant IS NULL THEN
    RAISE EXCEPTION 'bad_argument: role and tenant must not be NULL' USING ERRCODE = '22023';
  END IF;
  DELETE FROM docket.tenant_bindings b
   WHERE b.role = _unbind_tenant_impl.role AND b.tenant = _unbind_tenant_impl.tenant;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION docket._unbind_tenant_impl(regrole, text) IS
  'Internal: the body of docket.unbind_tenant, called only by its guarded wrapper (see docs/security.md).';
