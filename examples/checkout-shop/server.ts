// A merchant shop that pays through payd's widget, in one command once payd runs
// (`npm start` prints the demo merchant's API key at first start):
//   PAYD_API_KEY=payd_sk_... npm run example:shop
// then open http://127.0.0.1:4242/checkout and pay with 4242 4242 4242 4242 (or
// 4000 0000 0000 0002 to see a decline, then another card).
import { createShop } from './shop.ts';

const apiKey = process.env.PAYD_API_KEY;
if (!apiKey) {
  console.error('Set PAYD_API_KEY to a merchant API key (npm start prints the demo merchant\'s at first start).');
  process.exit(2);
}
const payd = (process.env.PAYD_URL ?? 'http://localhost:3000').replace(/\/$/, '');
const shop = createShop({ payd, apiKey, ...(process.env.PAYD_ENTITY_ID ? { entityId: process.env.PAYD_ENTITY_ID } : {}) });
const base = await shop.start(Number(process.env.SHOP_PORT ?? 4242)); // (not PORT: that is payd's own port)
console.log(`shop on ${base}/checkout (payd at ${payd})`);
