// The currencies and their minor units live in money/currency.ts (eligibility needs them
// too, below payments). Kept importable from here for the dashboard's pages, which move
// with the src/web/ work.
export { CURRENCY_DIGITS, digitsOf, exampleAmount, majorText, minorOf } from '../money/currency.ts';
