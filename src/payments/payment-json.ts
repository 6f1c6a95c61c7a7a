// The Payment resource as JSON text, written once per view: the same text answers the
// request and becomes the webhook event's payload (and the stored view of a GET with
// max-age). Compiled from the Payment schema, the one the OpenAPI document publishes,
// so that nothing outside the schema (a stored card's other fields, say) ever leaves.
import fastJson from 'fast-json-stringify';
import { COMMON_SCHEMAS } from './common.schemas.ts';
import { PAYMENT_SCHEMAS, Payment } from './payments.schemas.ts';

const serialize = fastJson(Payment, {
  schema: Object.fromEntries([...COMMON_SCHEMAS, ...PAYMENT_SCHEMAS].map((s) => [(s as unknown as { $id: string }).$id, s])),
});

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

/** The payment JSON of an operation's event: the payment plus the operation's id. */
export function withOperationId(paymentText: string, operationId: string): string {
  return `${paymentText.slice(0, -1)},"operation_id":${JSON.stringify(operationId)}}`;
}
