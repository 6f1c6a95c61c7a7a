// What the operator API's route files share (admin.routes.ts assembles them): the
// operator token and the OpenAPI tag.
export const auth = { schemes: ['admin' as const] };
export const tags = ['Operator'];
export const security = [{ operatorToken: [] }];
