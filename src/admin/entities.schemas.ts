import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../platform/http/schemas.ts';

/** An entity has at most this many checkout origins, each at most this long (the API's schema and the dashboard's form). */
export const MAX_CHECKOUT_ORIGINS = 20;
export const MAX_CHECKOUT_ORIGIN_LENGTH = 200;

export const Entity = Type.Object(
  {
    id: Uuid(), name: Type.String(), created_at: Timestamp(),
    checkout_origins: Type.Array(Type.String(), {
      description: 'Origins (https://shop.example) whose pages may embed the card frame and 3-D Secure frame of this entity\'s checkout (CSP frame-ancestors, with payd\'s own pages). Empty (the default): any page may embed them.',
    }),
  },
  { $id: 'Entity', description: 'A merchant entity: the tenant that owns payments, sessions and links.' },
);

export const CreateEntityBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200, description: 'Display name of the merchant' }) },
  { additionalProperties: false },
);
export type CreateEntityBody = Static<typeof CreateEntityBody>;

export const UpdateEntityBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Display name of the merchant' })),
    checkout_origins: Type.Optional(Type.Array(Type.String({ maxLength: MAX_CHECKOUT_ORIGIN_LENGTH }), {
      maxItems: MAX_CHECKOUT_ORIGINS,
      description: 'Replaces the origins that may embed the checkout frames: each scheme://host[:port] (https, or http for localhost), no path; [] lets any page embed them.',
    })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateEntityBody = Static<typeof UpdateEntityBody>;

export const EntityList = Type.Object({
  data: Type.Array(Type.Ref('Entity')),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as starting_after for the next page; null on the last page' }),
});

export const ListQuery = Type.Object(
  {
    // Query strings are not coerced (coercion is off so that JSON bodies keep their types).
    limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
    starting_after: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const CreatedApiKey = Type.Object({
  id: Uuid(),
  entity_id: Uuid(),
  api_key: Type.String({ description: 'The secret key. Shown once: payd keeps only its SHA-256.' }),
  prefix: Type.String({ description: 'The non-secret start of the key, to recognise it later' }),
  created_at: Timestamp(),
});

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    entity_id: Uuid(),
    prefix: Type.String(),
    created_at: Timestamp(),
    revoked_at: Type.Union([Timestamp(), Type.Null()]),
  },
  { $id: 'ApiKey' },
);

export const EntityParams = Type.Object({ id: Uuid() });
export const ApiKeyParams = Type.Object({ id: Uuid(), key_id: Uuid() });
