-- Saved cards merged by fingerprint (docs/decisions.md "Saved cards"): a customer who
-- saves at a partner a card saved there already (the same keyed fingerprint) keeps one
-- saved card, as Stripe and Adyen do. payd finds that saved card before the payment and
-- puts its id in the authorization's card facts (card.saved_card_id); when the partner
-- kept the card again, the trigger brings the saved card up to date (the new expiry, the
-- card facts the partner gave, the partner's reference of this authorization, which now
-- names the card at the partner) instead of adding a second one. A saved card deleted in
-- between is not revived: the card is then saved under the authorization's id, as before.
CREATE OR REPLACE FUNCTION payd_save_card() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kind = 'AUTHORIZATION' AND NEW.status = 'AUTHORIZED' AND NEW.partner_reference IS NOT NULL
     AND NEW.card IS NOT NULL AND NEW.card ? 'last_four_digits' THEN
    IF NEW.card ? 'saved_card_id' THEN
      UPDATE saved_cards s
         SET partner_reference = NEW.partner_reference,
             expiry_month = coalesce(NEW.card->>'expiry_month', s.expiry_month),
             expiry_year = coalesce(NEW.card->>'expiry_year', s.expiry_year),
             selected_network = coalesce(NEW.card->>'selected_network', s.selected_network),
             funding_type = coalesce(NEW.card->>'type', s.funding_type),
             country_code = coalesce(NEW.card->>'country_code', s.country_code),
             holder_name = coalesce(NEW.card->>'holder_name', s.holder_name)
        FROM payments p
       WHERE p.id = NEW.payment_id AND s.id = (NEW.card->>'saved_card_id')::uuid AND s.entity_id = p.entity_id
         AND s.partner = NEW.partner AND s.deleted_at IS NULL;
      IF FOUND THEN
        RETURN NULL;
      END IF;
    END IF;
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
