// SQL of the password grant (password.ts): the applications the operator enabled it for
// (idp_password_grant_clients).
import type { Queryable } from '../../../platform/db/index.ts';

export const passwordGrantRepo = {
  async enabled(q: Queryable, clientId: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM idp_password_grant_clients WHERE client_id = $1', [clientId]);
    return rows.length > 0;
  },

  async enable(q: Queryable, clientId: string): Promise<void> {
    await q.query('INSERT INTO idp_password_grant_clients (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING', [clientId]);
  },
};
