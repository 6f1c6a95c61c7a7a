-- The origins a merchant registers for its checkout (issue 42): when any, payd's card
-- frame and 3-D Secure frame may be embedded only by them (CSP frame-ancestors) and by
-- payd's own pages; none (the default): by any page, as Stripe Elements.
ALTER TABLE entities ADD COLUMN checkout_origins text[] NOT NULL DEFAULT '{}';
