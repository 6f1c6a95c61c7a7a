// First start on a fresh database: create a demo merchant and show its API key once.
import type { EntitiesService } from './entities.service.ts';

export async function bootstrapDemo(entities: EntitiesService): Promise<{ entityId: string; apiKey: string } | undefined> {
  if ((await entities.count()) > 0) return undefined;
  const entity = await entities.create('Demo merchant');
  const key = await entities.createApiKey(entity.id);
  return { entityId: entity.id, apiKey: key.api_key };
}
