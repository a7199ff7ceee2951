-- Helpers for the files that test run rows written through the table and
-- index access methods (src/pg/run_write.cpp); included with \ir, not a test
-- of its own.

-- unindexed(): every index of docket.runs checked by amcheck with
-- heapallindexed (each row version its predicate admits has its entry);
-- returns the indexes that fail.
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE FUNCTION pg_temp.unindexed() RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  i regclass;
  failed text[] := '{}';
BEGIN
  FOR i IN SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'docket.runs'::regclass
                                                      ORDER BY indexrelid LOOP
    BEGIN
      PERFORM bt_index_check(i, true);
    EXCEPTION WHEN OTHERS THEN
      failed := failed || (i::text || ': ' || SQLERRM);
    END;
  END LOOP;
  RETURN failed;
END $$;

-- saw(): a BEFORE UPDATE trigger function that records each updated run and
-- its new status in `seen`. A file attaches it (CREATE TRIGGER ... EXECUTE FUNCTION
-- pg_temp.saw()) to prove that the statement wrote the rows and the trigger
-- fired.
CREATE TEMP TABLE seen (run_id text, status text);
CREATE FUNCTION pg_temp.saw() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO seen VALUES (NEW.run_id, NEW.status);
  RETURN NEW;
END $$;
