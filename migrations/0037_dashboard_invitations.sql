-- Invitations to a merchant's dashboard that wait for the mailbox's owner (issue 40).
-- An address that already has an account which reaches nothing privileged (no console
-- administration, no dashboard membership) may have been registered by someone else
-- (a Management API application with create:users, an upstream of social login): adding
-- it at once would hand the merchant's dashboard to whoever holds its password. Such an
-- invitation waits here until its own mailed link is redeemed: choosing a new password
-- through it ends every session and token of the account, and the membership starts at
-- the next dashboard sign-in.
CREATE TABLE dashboard_invitations (
  reset_hash  text PRIMARY KEY REFERENCES idp_password_resets (token_hash) ON DELETE CASCADE,
  entity_id   uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES idp_users (id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
  invited_by  text,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_invitations_user_idx ON dashboard_invitations (user_id);

-- A reset link redeemed (a password chosen through it), told apart from one voided by
-- another reset or a password change (used_at is set for both).
ALTER TABLE idp_password_resets ADD COLUMN redeemed boolean NOT NULL DEFAULT false;
