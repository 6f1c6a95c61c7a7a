-- Which response types an application may use: code (default), messenger_code
-- (messenger account linking), token (login-as only).
ALTER TABLE idp_applications ADD COLUMN response_types jsonb NOT NULL DEFAULT '["code"]';
