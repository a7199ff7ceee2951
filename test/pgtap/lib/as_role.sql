-- as_role(who, sql): runs `sql` as role `who` and returns its single value as
-- text, or '<SQLSTATE> <message>' when it raises. pgTAP's bookkeeping stays with
-- the test's role: the switch happens in here. (Included with \ir by the role
-- suites; not a test of its own.)
CREATE FUNCTION pg_temp.as_role(who text, sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  outcome text;
BEGIN
  EXECUTE format('SET LOCAL ROLE %I', who);
  BEGIN
    EXECUTE sql INTO outcome;
  EXCEPTION WHEN OTHERS THEN
    outcome := SQLSTATE || ' ' || SQLERRM;
  END;
  RESET ROLE;
  RETURN outcome;
END
$$;
