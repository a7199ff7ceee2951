-- pg_temp.token_checks(leased): the three checks of a claim's tokens on the
-- rows of temp table `toks (run_id, claim_token)`, one per lease it returned:
-- `leased` tokens, all distinct, each a random version 4 UUID with the RFC
-- 4122 variant (a claim draws its tokens together), each stored on the run
-- it leases. Rows of tap results, for SELECT * FROM.
CREATE FUNCTION pg_temp.token_checks(leased int) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT is((SELECT count(DISTINCT claim_token)::int FROM toks), leased,
            leased || ' leases, ' || leased || ' distinct tokens')
  UNION ALL
  SELECT is((SELECT count(*)::int FROM toks WHERE substr(claim_token::text, 15, 1) = '4'
                                             AND substr(claim_token::text, 20, 1) IN ('8', '9', 'a', 'b')),
            leased, 'each a version 4, RFC 4122 variant UUID')
  UNION ALL
  SELECT is((SELECT count(*)::int FROM toks t JOIN docket.runs r USING (run_id)
              WHERE r.claim_token = t.claim_token), leased, 'each stored on the run it leases') $$;
