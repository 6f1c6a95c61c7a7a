// The dashboard's URL parameters.
import { Type } from 'typebox';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const EntityParams = Type.Object({ entity: Type.String({ pattern: UUID.source }) });
/** An entity and one of its objects (a payment, a link, an API key). */
export const IdParams = Type.Object({ entity: Type.String({ pattern: UUID.source }), id: Type.String({ pattern: UUID.source }) });
export const PaymentParams = IdParams;
