// The Developers page (admins): the entity's API keys (a new key shown once), revoke.
import type { VNode } from 'preact';
import type { EntitiesService } from '../admin/entities.service.ts';
import type { Member } from './auth.routes.ts';
import { CopyField, PostForm, Table } from './parts.tsx';
import { when } from './views.ts';

/** What the page says above the keys: a revocation done, or the new key, shown in this answer only. */
type ApiKey = Awaited<ReturnType<EntitiesService['listApiKeys']>>[number];

export type KeysMessage = { revoked: true } | { newKey: string } | undefined;

export function DevelopersBody({ m, keys, message }: { m: Member; keys: ApiKey[]; message: KeysMessage }): VNode {
  const base = `/dashboard/${m.entity.entity_id}/developers`;
  const zone = m.entity.time_zone;
  const rows = keys.map((k) => (
    <tr>
      <td><code>{k.prefix}…</code></td><td>{when(k.created_at, zone)}</td><td>{k.revoked_at ? `revoked ${when(k.revoked_at, zone)}` : 'active'}</td>
      <td>{k.revoked_at ? null : <PostForm action={`${base}/api-keys/${k.id}/revoke`} csrf={m.csrf}><button type="submit" class="danger">Revoke</button></PostForm>}</td>
    </tr>
  ));
  return (
    <>
      {message && 'revoked' in message ? <p class="notice" role="status">The key is revoked: it gets no new token, and its tokens stop working within seconds.</p> : null}
      {message && 'newKey' in message ? (
        <div class="notice" role="status">
          <p>Your new API key, shown this once: copy it now.</p>
          <label for="new-key">API key</label><CopyField id="new-key" value={message.newKey} />
        </div>
      ) : null}
      <h2>API keys</h2>
      <p>An API key gets access tokens for the Payment API (<code>POST /oauth/token</code> with <code>x-api-key</code>). A new key is shown once.</p>
      <PostForm action={`${base}/api-keys`} csrf={m.csrf}><button type="submit">Create an API key</button></PostForm>
      <Table label="API keys" cols={['Key', 'Created', 'Status', 'Actions']} rows={rows} empty="No API key." />
    </>
  );
}
