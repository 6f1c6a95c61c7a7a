// Amounts in the API: integers in the minor unit of the currency, within one bound (the
// payments, the links and the eligibility rules all validate against it).
import { Type } from 'typebox';

export const MAX_AMOUNT = 99_999_999_999;
export const Amount = (description = 'Integer amount in the minor unit of the currency (cents for EUR)') =>
  Type.Integer({ minimum: 1, maximum: MAX_AMOUNT, description });
export const NonNegativeAmount = () => Type.Integer({ minimum: 0, maximum: MAX_AMOUNT });
