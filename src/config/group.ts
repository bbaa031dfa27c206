/**
 * Group names (C-GRP-1) and the home-group precedence (C-GRP-2), in one place
 * for the config, the client, the session runtime and the CLI.
 */

/**
 * The group every session is in unless it says otherwise (C-GRP-1).
 *
 * @category groups
 * @since 0.1.0
 */
export const DEFAULT_GROUP = "default"

/**
 * A group name as the broker keeps it: trimmed; `undefined`, empty or
 * whitespace-only means `"default"` (C-GRP-1).
 *
 * @category groups
 * @since 0.1.0
 */
export const normalizeGroup = (group: string | undefined): string => {
  const trimmed = group?.trim() ?? ""
  return trimmed === "" ? DEFAULT_GROUP : trimmed
}

/**
 * A session's home group (C-GRP-2): the first non-blank of `levels`, most
 * specific first — the group a launcher injects for this session, then the
 * settings' `group` (env `ATOMIC_INTERCOM_GROUP` / `PI_INTERCOM_GROUP`, else
 * config `group`) — trimmed; `"default"` when every level is blank.
 *
 * @example
 * ```ts
 * import { homeGroup } from "effect-intercom/config"
 *
 * homeGroup(undefined, "  review ") // "review"
 * homeGroup("   ", undefined) // "default"
 * ```
 *
 * @category groups
 * @since 0.1.0
 */
export const homeGroup = (...levels: ReadonlyArray<string | undefined>): string => {
  for (const level of levels) {
    const trimmed = level?.trim() ?? ""
    if (trimmed !== "") return trimmed
  }
  return DEFAULT_GROUP
}
