import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../platform/http/schemas.ts';

export const Entity = Type.Object(
  { id: Uuid(), name: Type.String(), created_at: Timestamp() },
  { $id: 'Entity', description: 'A merchant entity: the tenant that owns payments, sessions and links.' },
);

export const CreateEntityBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200, description: 'Display name of the merchant' }) },
  { additionalProperties: false },
);
export type CreateEntityBody = Static<typeof CreateEntityBody>;

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
