// The dashboard's members, roles and their SQL live in admin/members.repo.ts (the demo
// bootstrap and the operator API need them too; admin sits below the dashboard). Kept
// importable from here for the dashboard's pages, which move with the src/web/ work.
export { type Member, type Membership, type Role, ROLES, can, membersRepo } from '../admin/members.repo.ts';
