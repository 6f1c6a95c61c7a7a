-- Authority of the Management API (docs/identity.md, "Who reaches what").
-- An application registered through the Management API belongs to the application that
-- registered it: the client scopes reach only the applications a caller created, unless
-- it holds manage:all_clients. NULL: registered by the operator, the console or payd.
ALTER TABLE idp_applications ADD COLUMN created_by text;

-- Login-as records who did it from their credentials: `application:<client_id>` (a
-- Management API token) or `user:<user id>` (a console administrator), beside the
-- spec's login_as_profile_id (the name the caller passed, or the console user's email).
ALTER TABLE idp_user_events ADD COLUMN login_as_actor text;

-- Revoking an application's Management API tokens moves its generation on; a token carries
-- the generation it was issued in. (tokens_not_before compared a token's iat, in whole
-- seconds, with a cut-off in milliseconds: a token issued in the same second as the
-- revocation but after it was refused for its whole hour.)
ALTER TABLE idp_applications ADD COLUMN tokens_generation integer NOT NULL DEFAULT 0;
