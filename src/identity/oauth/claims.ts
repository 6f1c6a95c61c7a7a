// Claims about the user that id_tokens and /userinfo share.

/** given_name and family_name when the user has them: an empty or missing name is omitted, never null. */
export function nameClaims(u: { given_name: string | null; family_name: string | null }): { given_name?: string; family_name?: string } {
  return {
    ...(u.given_name ? { given_name: u.given_name } : {}),
    ...(u.family_name ? { family_name: u.family_name } : {}),
  };
}
