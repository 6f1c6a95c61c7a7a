-- Eligibility rules: one rule set per merchant entity, managed by the operator API
-- (PUT replaces the whole set). An entity without a row gets the defaults: every
-- partner/method whose own limits allow the order. The rules are a JSON array validated
-- by payd before it is written (src/eligibility/rules.schemas.ts); version counts PUTs.

CREATE TABLE eligibility_rules (
  entity_id   uuid PRIMARY KEY REFERENCES entities (id),
  rules       jsonb NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
  version     integer NOT NULL DEFAULT 1 CHECK (version > 0),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
