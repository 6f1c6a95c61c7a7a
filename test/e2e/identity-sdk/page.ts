// The relying party's page of the identity SDK browser test: the real, unmodified
// @reachfive/identity-core, bundled by esbuild, configured with payd's domain and an
// application's client id (window.PAYD_SDK), exposed to the test as window.sdk.
import { createClient } from '@reachfive/identity-core';

declare global {
  interface Window {
    PAYD_SDK: { domain: string; clientId: string };
    sdk: ReturnType<typeof createClient>;
    sdkError: (err: unknown) => Record<string, unknown>;
  }
}

window.sdk = createClient({ domain: window.PAYD_SDK.domain, clientId: window.PAYD_SDK.clientId });
// What the SDK rejects with, as plain data for page.evaluate.
window.sdkError = (err) => (err instanceof Error ? { message: err.message } : JSON.parse(JSON.stringify(err)) as Record<string, unknown>);
document.getElementById('status')!.textContent = 'ready';
