-- Every change of an entity's eligibility rules is announced on the channel
-- payd_eligibility_rules (payload: the entity's id), when its transaction commits: each
-- payd process keeps the rules it read (eligibility/rules.service.ts) and drops them on
-- the announcement, so that POST /v2/payments does not read them on every call and a
-- change still holds in every process within the notification's delay.
-- docs/decisions.md, "Eligibility rules are kept in each process".
CREATE FUNCTION payd_eligibility_rules_changed() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('payd_eligibility_rules', coalesce(NEW.entity_id, OLD.entity_id)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER eligibility_rules_changed
  AFTER INSERT OR UPDATE OR DELETE ON eligibility_rules
  FOR EACH ROW EXECUTE FUNCTION payd_eligibility_rules_changed();
