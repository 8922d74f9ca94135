import { charCount } from "../../lib/text";
import type { TeamAccessLevel } from "./model";

export { accessLevelRule } from "./model";

/** The interface's minimum length for a team password. */
export const MIN_TEAM_PASSWORD = 8;

/** Why a team write's password is unacceptable (a 400), or null. */
export function passwordProblem(accessLevel: TeamAccessLevel, password: string | undefined, hasStoredPassword: boolean): string | null {
  if (password !== undefined && charCount(password) < MIN_TEAM_PASSWORD) {
    return `access_password must be at least ${MIN_TEAM_PASSWORD} characters`;
  }
  if (accessLevel === "PASSWORD_PROTECTED" && password === undefined && !hasStoredPassword) {
    return "access_password is required when access_level is PASSWORD_PROTECTED";
  }
  return null;
}

/** How a caller outside the team's account may read it. */
export type ReadDecision = "allow" | "needs-credentials" | "needs-password" | "check-password" | "forbidden";

/** Access rule for GET /teams/{ref}: members always; others by the team's access level. */
export function readDecision(
  team: { account_id: number; access_level: TeamAccessLevel },
  caller: { accountId?: number; passwordGiven: boolean },
): ReadDecision {
  if (caller.accountId === team.account_id) return "allow";
  if (team.access_level === "PUBLIC") return "allow";
  if (team.access_level === "PASSWORD_PROTECTED") return caller.passwordGiven ? "check-password" : "needs-password";
  return caller.accountId === undefined ? "needs-credentials" : "forbidden";
}
