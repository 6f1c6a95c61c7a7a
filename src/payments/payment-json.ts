// The Payment resource as JSON text, written once per view: the same text answers the
// request (and becomes the stored view of a GET with max-age). A payment's webhook event
// carries its own, smaller document (PaymentEventData: the summary and what changed),
// written by its own serializer. Both are compiled from their published TypeBox schemas,
// so that nothing outside a schema (a stored card's other fields, say) ever leaves.
import fastJson from 'fast-json-stringify';
import { COMMON_SCHEMAS } from './common.schemas.ts';
import { PAYMENT_SCHEMAS, Payment, PaymentEventData, type PaymentEventDataT } from './payments.schemas.ts';

const refs = Object.fromEntries([...COMMON_SCHEMAS, ...PAYMENT_SCHEMAS].map((s) => [(s as unknown as { $id: string }).$id, s]));
const serialize = fastJson(Payment, { schema: refs });
const serializeEvent = fastJson(PaymentEventData, { schema: refs });

/** The JSON answered with a payment (views are not changed once built, so the text is kept with the view). */
const written = new WeakMap<object, string>();

export function paymentJson(view: object): string {
  let text = written.get(view);
  if (text === undefined) {
    text = serialize(view);
    written.set(view, text);
  }
  return text;
}

/** The JSON text of a payment event's data. */
export function paymentEventJson(data: PaymentEventDataT): string {
  return serializeEvent(data);
}
