-- Secrets at rest and sign-up without account enumeration (payd issue 40).
--
-- 1. The mail outbox keeps no usable link: mails written before this migration kept the
--    whole body, reset and invitation links included (an invitation is valid 7 days).
--    Their tokens are redacted as new mails' are (logger.ts redactLinks); the links that
--    were mailed keep working for whoever received them (the tokens are stored hashed).
UPDATE idp_mail_outbox
   SET body = regexp_replace(body, '([?&#](token|tkn|code)=)[^&#[:space:]]+', '\1[redacted]', 'gi')
 WHERE body ~* '[?&#](token|tkn|code)=';

-- 2. A sign-up (hosted page or SDK) no longer creates the account at once: it is a
--    request, confirmed by the link mailed to the address (the token by its SHA-256, 24
--    hours, single use), so that the answer is the same whether the address has an
--    account or not. The password is kept as its argon2id hash until the confirmation
--    creates the user. A request for an address that has an account only notifies its
--    owner (notice_only: no link); the rows also cap those mails per address.
CREATE TABLE idp_signup_requests (
  token_hash     text PRIMARY KEY,
  email          text NOT NULL,
  password_hash  text NOT NULL,
  given_name     text,
  family_name    text,
  client_id      text REFERENCES idp_applications (client_id) ON DELETE CASCADE,
  return_to      text,
  notice_only    boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz
);
CREATE INDEX idp_signup_requests_email_idx ON idp_signup_requests (lower(email), created_at DESC);
