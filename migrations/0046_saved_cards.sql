-- Saved cards (cards on file; docs/decisions.md "Saved cards"). A card authorized with
-- save_token that the partner kept (token_saved) becomes a saved card of the payment's
-- entity and customer, recorded by the database in the statement that records the
-- partner's answer, whatever path of payd writes it (creation, a 3-D Secure return, a
-- late answer, recovery): the trigger below. Its id is the id of the authorization that
-- saved it (the transaction shows it as saved_card_id). payd keeps no card number and no
-- CVC: the partner's reference of that authorization (by which the partner finds the
-- card it kept), the card facts payd shows anyway (bin, last four, expiry, network,
-- funding, the keyed fingerprint) and the customer it belongs to (customer.reference,
-- customer.email of the payment). A deleted card keeps its row (deleted_at): payments
-- made with it still name it; the API answers 404 for it.
CREATE TABLE saved_cards (
  id                  uuid PRIMARY KEY,
  entity_id           uuid NOT NULL REFERENCES entities (id),
  customer_reference  text,
  customer_email      text,
  partner             text NOT NULL,
  partner_reference   text NOT NULL,
  bin                 text NOT NULL,
  last_four_digits    text NOT NULL,
  expiry_month        text NOT NULL,
  expiry_year         text NOT NULL,
  fingerprint         text NOT NULL,
  selected_network    text NOT NULL,
  funding_type        text NOT NULL,
  country_code        text,
  holder_name         text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  deleted_at          timestamptz
);
CREATE INDEX saved_cards_by_customer_reference ON saved_cards (entity_id, customer_reference, created_at) WHERE deleted_at IS NULL;
CREATE INDEX saved_cards_by_customer_email ON saved_cards (entity_id, customer_email, created_at) WHERE deleted_at IS NULL;

CREATE FUNCTION payd_save_card() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kind = 'AUTHORIZATION' AND NEW.status = 'AUTHORIZED' AND NEW.partner_reference IS NOT NULL
     AND NEW.card IS NOT NULL AND NEW.card ? 'last_four_digits' THEN
    INSERT INTO saved_cards (id, entity_id, customer_reference, customer_email, partner, partner_reference, bin, last_four_digits,
                             expiry_month, expiry_year, fingerprint, selected_network, funding_type, country_code, holder_name)
    SELECT NEW.id, p.entity_id, nullif(p.customer->>'reference', ''), nullif(lower(p.customer->>'email'), ''), NEW.partner,
           NEW.partner_reference, coalesce(NEW.card->>'bin', ''), NEW.card->>'last_four_digits', coalesce(NEW.card->>'expiry_month', ''),
           coalesce(NEW.card->>'expiry_year', ''), coalesce(NEW.card->>'fingerprint', ''), coalesce(NEW.card->>'selected_network', 'UNKNOWN'),
           coalesce(NEW.card->>'type', 'UNKNOWN'), NEW.card->>'country_code', NEW.card->>'holder_name'
      FROM payments p WHERE p.id = NEW.payment_id
    ON CONFLICT (id) DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER partner_transactions_save_card AFTER INSERT OR UPDATE OF token_saved ON partner_transactions
  FOR EACH ROW WHEN (NEW.token_saved IS TRUE) EXECUTE FUNCTION payd_save_card();

-- Cards kept before this migration (save_token answered token_saved by a simulator) are
-- saved cards too, so that every saved_card_id a payment shows names one.
INSERT INTO saved_cards (id, entity_id, customer_reference, customer_email, partner, partner_reference, bin, last_four_digits,
                         expiry_month, expiry_year, fingerprint, selected_network, funding_type, country_code, holder_name, created_at)
SELECT t.id, p.entity_id, nullif(p.customer->>'reference', ''), nullif(lower(p.customer->>'email'), ''), t.partner,
       t.partner_reference, coalesce(t.card->>'bin', ''), t.card->>'last_four_digits', coalesce(t.card->>'expiry_month', ''),
       coalesce(t.card->>'expiry_year', ''), coalesce(t.card->>'fingerprint', ''), coalesce(t.card->>'selected_network', 'UNKNOWN'),
       coalesce(t.card->>'type', 'UNKNOWN'), t.card->>'country_code', t.card->>'holder_name', t.updated_at
  FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
 WHERE t.token_saved IS TRUE AND t.kind = 'AUTHORIZATION' AND t.status = 'AUTHORIZED' AND t.partner_reference IS NOT NULL
   AND t.card IS NOT NULL AND t.card ? 'last_four_digits';
