-- id_token signature per application: HS256 with the client secret (the spec's default)
-- or RS256 with the provider's published keys.
ALTER TABLE idp_applications ADD COLUMN id_token_alg text NOT NULL DEFAULT 'HS256' CHECK (id_token_alg IN ('HS256', 'RS256'));
