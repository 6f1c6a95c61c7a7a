// Words shoppers read, in English and French (the spec's service is French). The
// language: the merchant's choice for the session (its customer's `locale`, a language
// tag), else the browser's Accept-Language, else English. Shared by the widget (bundled)
// and payd's own pages; no dependency, so that the widget bundle stays small.

export type Locale = 'en' | 'fr';
export const LOCALES: readonly Locale[] = ['en', 'fr'];

const en = {
  loading: 'Loading the payment form…',
  loadFailed: 'The payment form could not load:',
  expired: 'This payment session has expired.',
  alreadyPaid: 'This order is already paid.',
  inProgress: 'A payment for this order is being completed.',
  cancelledByMerchant: 'The merchant cancelled this payment.',
  tooManyAttempts: 'Too many payment attempts were made for this order.',
  closed: 'This payment session is closed.',
  returnToMerchant: 'Return to the merchant',
  noMethod: 'No payment method is available for this order.',
  paymentTo: 'Payment to {name}',
  order: 'Order {reference}',
  items: 'Items',
  amountToPay: 'Amount to pay: {total}',
  paymentMethod: 'Payment method',
  method_CARD: 'Card',
  method_GIFT_CARD: 'Gift card',
  method_INSTALLMENTS_3X: 'Pay in 3 instalments',
  method_INSTALLMENTS_4X: 'Pay in 4 instalments',
  cardNumber: 'Card number',
  expiry: 'Expiry date (MM/YY)',
  expiryPlaceholder: 'MM/YY',
  cvv: 'Security code (CVV)',
  holder: 'Name on card',
  giftToggle: 'Pay part with a gift card',
  giftNumber: 'Gift card number',
  giftAmount: 'Amount from the gift card ({currency})',
  errCardDigits: 'Enter the 12 to 19 digits of the card number.',
  errCardInvalid: 'This card number is not valid; check the digits.',
  errExpiryFormat: 'Enter the expiry date as MM/YY.',
  errExpired: 'This card has expired.',
  errCvv: 'Enter the 3-digit code on the back of the card (4 digits on the front for American Express).',
  errGiftDigits: 'Enter the 12 to 19 digits of the gift card.',
  errGiftAmount: 'Enter an amount above 0 and below {total}.',
  pay: 'Pay {total}',
  paying: 'Paying…',
  cancel: 'Cancel and return to the merchant',
  declined: 'Your payment was declined, and no money was taken.',
  decline_expired_card: 'Your card has expired, and no money was taken.',
  decline_incorrect_cvc: 'The security code (CVC) is not right, and no money was taken.',
  decline_insufficient_funds: 'Your card has insufficient funds, and no money was taken.',
  failed: 'The payment could not be processed, and no money was taken.',
  tryAnother: 'Try another card or payment method.',
  tryAnotherLast: 'Try another card or payment method (one attempt left).',
  didNotGoThrough: 'The payment did not go through:',
  cardDetails: 'Card details',
  email: 'Your email address',
  emailHint: 'The instalment provider needs it to set up your plan.',
  errEmail: 'Enter an email address such as name@example.com.',
  threeDsTitle: 'Confirm the payment with your bank',
  checking: 'Checking with your bank…',
  continue: 'Continue',
  incompleteAddress: 'This payment page address is incomplete: open the full link you were given.',
  // payd's own pages
  securePayment: 'Secure payment',
  securePaymentIntro: 'Your payment details are sent to payd only.',
  payMerchant: 'Pay {name}',
  payYourOrder: 'Pay your order',
  amountDue: 'Amount due: {amount}.',
  orderDot: 'Order {reference}.',
  accepted: 'Payment accepted',
  acceptedText: 'Thank you: your payment was accepted.',
  mayClose: 'You may close this page.',
  notCompleted: 'Payment not completed',
  notCompletedText: 'Your payment was not completed, and no money was taken.',
  noPayment: 'No payment was made.',
  beingConfirmed: 'Payment being confirmed',
  beingConfirmedText: 'Your payment is still being confirmed by your bank. You may close this page.',
  tryAgain: 'Try again with another card or method',
  receipt: 'Receipt',
  paidTo: 'Paid to',
  amount: 'Amount',
  orderLabel: 'Order',
  date: 'Date',
  paidWith: 'Paid with',
  reference: 'Payment reference',
  savedCards: 'Your saved cards',
  savedCard: '{brand} ending in {last4}, expires {month}/{year}',
  newCard: 'A new card',
};

export type MessageKey = keyof typeof en;

const fr: Record<MessageKey, string> = {
  loading: 'Chargement du formulaire de paiement…',
  loadFailed: 'Le formulaire de paiement n’a pas pu se charger :',
  expired: 'Cette session de paiement a expiré.',
  alreadyPaid: 'Cette commande est déjà payée.',
  inProgress: 'Un paiement de cette commande est en cours.',
  cancelledByMerchant: 'Le marchand a annulé ce paiement.',
  tooManyAttempts: 'Trop de tentatives de paiement ont été faites pour cette commande.',
  closed: 'Cette session de paiement est close.',
  returnToMerchant: 'Revenir au marchand',
  noMethod: 'Aucun moyen de paiement n’est disponible pour cette commande.',
  paymentTo: 'Paiement à {name}',
  order: 'Commande {reference}',
  items: 'Articles',
  amountToPay: 'Montant à payer : {total}',
  paymentMethod: 'Moyen de paiement',
  method_CARD: 'Carte',
  method_GIFT_CARD: 'Carte cadeau',
  method_INSTALLMENTS_3X: 'Payer en 3 fois',
  method_INSTALLMENTS_4X: 'Payer en 4 fois',
  cardNumber: 'Numéro de carte',
  expiry: 'Date d’expiration (MM/AA)',
  expiryPlaceholder: 'MM/AA',
  cvv: 'Cryptogramme (CVV)',
  holder: 'Nom sur la carte',
  giftToggle: 'Payer une partie avec une carte cadeau',
  giftNumber: 'Numéro de la carte cadeau',
  giftAmount: 'Montant pris sur la carte cadeau ({currency})',
  errCardDigits: 'Saisissez les 12 à 19 chiffres du numéro de carte.',
  errCardInvalid: 'Ce numéro de carte n’est pas valide ; vérifiez les chiffres.',
  errExpiryFormat: 'Saisissez la date d’expiration au format MM/AA.',
  errExpired: 'Cette carte a expiré.',
  errCvv: 'Saisissez les 3 chiffres au dos de la carte (4 chiffres au recto pour American Express).',
  errGiftDigits: 'Saisissez les 12 à 19 chiffres de la carte cadeau.',
  errGiftAmount: 'Saisissez un montant supérieur à 0 et inférieur à {total}.',
  pay: 'Payer {total}',
  paying: 'Paiement en cours…',
  cancel: 'Annuler et revenir au marchand',
  declined: 'Votre paiement a été refusé, et aucun montant n’a été prélevé.',
  decline_expired_card: 'Votre carte a expiré, et aucun montant n’a été prélevé.',
  decline_incorrect_cvc: 'Le code de sécurité (CVC) n’est pas le bon, et aucun montant n’a été prélevé.',
  decline_insufficient_funds: 'Le solde de votre carte est insuffisant, et aucun montant n’a été prélevé.',
  failed: 'Le paiement n’a pas pu être traité, et aucun montant n’a été prélevé.',
  tryAnother: 'Essayez une autre carte ou un autre moyen de paiement.',
  tryAnotherLast: 'Essayez une autre carte ou un autre moyen de paiement (dernière tentative).',
  didNotGoThrough: 'Le paiement n’a pas abouti :',
  cardDetails: 'Données de la carte',
  email: 'Votre adresse e-mail',
  emailHint: 'Le prestataire du paiement en plusieurs fois en a besoin pour votre échéancier.',
  errEmail: 'Saisissez une adresse e-mail comme nom@exemple.fr.',
  threeDsTitle: 'Confirmez le paiement auprès de votre banque',
  checking: 'Vérification auprès de votre banque…',
  continue: 'Continuer',
  incompleteAddress: 'L’adresse de cette page de paiement est incomplète : ouvrez le lien complet qui vous a été donné.',
  securePayment: 'Paiement sécurisé',
  securePaymentIntro: 'Vos données de paiement ne sont envoyées qu’à payd.',
  payMerchant: 'Payer {name}',
  payYourOrder: 'Payer votre commande',
  amountDue: 'Montant dû : {amount}.',
  orderDot: 'Commande {reference}.',
  accepted: 'Paiement accepté',
  acceptedText: 'Merci : votre paiement a été accepté.',
  mayClose: 'Vous pouvez fermer cette page.',
  notCompleted: 'Paiement non abouti',
  notCompletedText: 'Votre paiement n’a pas abouti, et aucun montant n’a été prélevé.',
  noPayment: 'Aucun paiement n’a été fait.',
  beingConfirmed: 'Paiement en cours de confirmation',
  beingConfirmedText: 'Votre banque confirme encore votre paiement. Vous pouvez fermer cette page.',
  tryAgain: 'Réessayer avec une autre carte ou un autre moyen',
  receipt: 'Reçu',
  paidTo: 'Payé à',
  amount: 'Montant',
  orderLabel: 'Commande',
  date: 'Date',
  paidWith: 'Payé avec',
  reference: 'Référence du paiement',
  savedCards: 'Vos cartes enregistrées',
  savedCard: '{brand} se terminant par {last4}, expire fin {month}/{year}',
  newCard: 'Une nouvelle carte',
};

const DICTIONARIES: Record<Locale, Record<MessageKey, string>> = { en, fr };

/** The message in the locale, with {placeholders} filled. */
export function t(locale: Locale, key: MessageKey, values: Record<string, string | number> = {}): string {
  return DICTIONARIES[locale][key].replace(/\{(\w+)\}/g, (m, name: string) => (name in values ? String(values[name]) : m));
}

/** Whether a message key exists (for keys built at run time, e.g. decline_{reason}). */
export function hasMessage(key: string): key is MessageKey {
  return Object.prototype.hasOwnProperty.call(en, key);
}

/** A supported locale for a language tag ("fr-CA" -> fr), or undefined. */
export function localeOf(tag: string | undefined | null): Locale | undefined {
  const lang = tag?.trim().toLowerCase().split(/[-_]/)[0];
  return LOCALES.find((l) => l === lang);
}

/**
 * The locale of a page: the merchant's choice for the session when supported, else the
 * best of Accept-Language (by q-value, in order), else English.
 */
export function pickLocale(acceptLanguage: string | undefined, override?: string | null): Locale {
  const chosen = localeOf(override);
  if (chosen) return chosen;
  const ranked = (acceptLanguage ?? '').split(',').map((part, i) => {
    const [tag, ...params] = part.trim().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    return { tag, q: Number.isFinite(q) ? q : 0, i };
  }).filter((x) => x.tag && x.q > 0).sort((a, b) => b.q - a.q || a.i - b.i);
  for (const { tag } of ranked) {
    const l = localeOf(tag);
    if (l) return l;
  }
  return 'en';
}

/** The Intl locale amounts and dates of a page are formatted in. */
export function intlLocale(locale: Locale): string {
  return locale === 'fr' ? 'fr-FR' : 'en-GB';
}

/** Shopper-facing name of a payment method (never the raw enum). */
export function methodLabel(locale: Locale, method: string): string {
  const key = `method_${method}` as MessageKey;
  if (key in en) return t(locale, key);
  const words = method.replace(/_/g, ' ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}
