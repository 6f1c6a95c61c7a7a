// First start on a fresh database: create a demo merchant and show its API key once, and
// the first administrator of its dashboard with a password shown once.
import { randomBytes } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import type { IdentityService } from '../identity/idp/idp.service.ts';
import { membersRepo } from './members.repo.ts';
import type { EntitiesService } from './entities.service.ts';

export const DEMO_ADMIN_EMAIL = 'admin@demo.payd.dev';

export async function bootstrapDemo(entities: EntitiesService, admin?: { db: Db; identity: IdentityService }):
Promise<{ entityId: string; apiKey: string; dashboard?: { email: string; password: string } } | undefined> {
  if ((await entities.count()) > 0) return undefined;
  const entity = await entities.create('Demo merchant');
  const key = await entities.createApiKey(entity.id);
  if (!admin) return { entityId: entity.id, apiKey: key.api_key };
  const password = randomBytes(15).toString('base64url');
  const user = await admin.identity.createUser({ email: DEMO_ADMIN_EMAIL, password, given_name: 'Demo', family_name: 'Admin', email_verified: true });
  await membersRepo.upsert(admin.db, entity.id, user.id, 'admin', 'first start');
  return { entityId: entity.id, apiKey: key.api_key, dashboard: { email: DEMO_ADMIN_EMAIL, password } };
}
