// The dashboard's members, roles and their SQL live in admin/members.repo.ts (the demo
// bootstrap and the operator API need them too; admin sits below the dashboard): the
// roles and types for the dashboard's pages. The pages reach the repository through
// DashboardService and TeamService.
export { type Member, type Membership, type Role, ROLES, can } from '../admin/members.repo.ts';
