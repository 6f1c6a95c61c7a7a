// Operator API: onboarding of merchant entities and their API keys (entities.routes.ts),
// and here signing key rotation. Authenticated by the operator token (PAYD_ADMIN_TOKEN);
// off when it is unset.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses, StringEnum } from '../platform/http/schemas.ts';
import type { KeyPurpose, KeyStore } from '../platform/crypto/keystore.ts';
import type { EntitiesService } from './entities.service.ts';
import { auth, security, tags } from './admin.common.ts';
import { entityRoutes } from './entities.routes.ts';

export interface AdminDeps {
  entities: EntitiesService;
  /** Told at once of a revocation so this process refuses the key's tokens immediately. */
  onApiKeyRevoked: (keyId: string) => void;
  keys: KeyStore;
  purposes: KeyPurpose[];
}

export async function adminRoutes(root: FastifyInstance, { entities, keys, purposes, onApiKeyRevoked }: AdminDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  await entityRoutes(root, { entities, onApiKeyRevoked });

  const purposeNames = purposes.map((p) => p.name);
  app.post('/admin/v1/signing-keys/rotate', {
    config: { auth },
    schema: {
      tags, security, summary: 'Rotate a signing key',
      description: 'A new key signs from now on; the previous key stays published until its overlap period ends.',
      body: Type.Object(
        { purpose: StringEnum(purposeNames) },
        { additionalProperties: false },
      ),
      response: {
        200: Type.Object({ purpose: Type.String(), kid: Type.String() }),
        ...problemResponses(400, 401),
      },
    },
  }, async (request) => {
    const purpose = purposes.find((p) => p.name === request.body.purpose)!;
    return { purpose: purpose.name, kid: await keys.rotate(purpose) };
  });
}
