// The lists' filters, for the routes that cannot reach lists.repo.ts themselves (a route
// goes through a service): the payment list's filter, built from its query.
export { paymentListFilter } from './lists.repo.ts';
