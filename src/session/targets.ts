/**
 * Target resolution and display targets (C-TGT-1…7, open question 4: the 004
 * rules). Pure functions over a session list; the session runtime calls them
 * with the broker's `list` answer.
 *
 * Order: exact full id, then exact case-insensitive name, then a unique id
 * prefix of at least 8 characters. A name and an 8+ character prefix that
 * match *different* sessions are ambiguous; nothing is ever guessed.
 */

/**
 * The fields target resolution needs (SessionInfo fits).
 *
 * @category models
 * @since 0.1.0
 */
export interface TargetIdentity {
  readonly id: string
  readonly name?: string | undefined
}

/**
 * The shortest id prefix that resolves a target, unless it is also a name (C-TGT-5).
 *
 * @category targets
 * @since 0.1.0
 */
export const MIN_TARGET_PREFIX_LENGTH = 8

/**
 * The outcome of `resolveTarget`: found, absent, or why it is not one session.
 *
 * @category models
 * @since 0.1.0
 */
export type TargetResolution<T extends TargetIdentity> =
  | { readonly _tag: "Found"; readonly session: T }
  | { readonly _tag: "NotFound" }
  /** Several sessions share the name (C-TGT-2). */
  | { readonly _tag: "AmbiguousName"; readonly matches: ReadonlyArray<T> }
  /** An id prefix (possibly merged with a name) matches several sessions (C-TGT-3, C-TGT-5). */
  | { readonly _tag: "AmbiguousPrefix"; readonly matches: ReadonlyArray<T> }
  /** A prefix under 8 characters that names no session (C-TGT-5). */
  | { readonly _tag: "PrefixTooShort"; readonly matches: ReadonlyArray<T> }

const lowerName = (session: TargetIdentity): string | undefined => {
  const name = session.name?.trim().toLowerCase()
  return name === undefined || name.length === 0 ? undefined : name
}

const uniqueById = <T extends TargetIdentity>(sessions: ReadonlyArray<T>): ReadonlyArray<T> => {
  const byId = new Map<string, T>()
  for (const session of sessions) if (!byId.has(session.id)) byId.set(session.id, session)
  return [...byId.values()]
}

/**
 * Resolves `raw` among `sessions` (C-TGT-1, C-TGT-5).
 *
 * @example
 * ```ts
 * import { resolutionFailure, resolveTarget } from "effect-intercom/session"
 *
 * const sessions = [{ id: "1a2b3c4d-aaaa", name: "planner" }, { id: "1a2b3c4d-bbbb", name: "reviewer" }]
 * resolveTarget(sessions, "PLANNER") // { _tag: "Found", session: { id: "1a2b3c4d-aaaa", … } }
 * const short = resolveTarget(sessions, "1a2b")
 * if (short._tag !== "Found" && short._tag !== "NotFound") {
 *   resolutionFailure("1a2b", short, sessions) // Target "1a2b" is too short. Use the displayed target …
 * }
 * ```
 *
 * @category targets
 * @since 0.1.0
 */
export const resolveTarget = <T extends TargetIdentity>(
  sessions: ReadonlyArray<T>,
  raw: string
): TargetResolution<T> => {
  const target = raw.trim()
  if (target.length === 0) return { _tag: "NotFound" }
  const exact = sessions.filter((session) => session.id === target)
  if (exact.length === 1 && exact[0] !== undefined) return { _tag: "Found", session: exact[0] }
  const lower = target.toLowerCase()
  const exactFolded = sessions.filter((session) => session.id.toLowerCase() === lower)
  if (exactFolded.length === 1 && exactFolded[0] !== undefined) return { _tag: "Found", session: exactFolded[0] }

  const names = sessions.filter((session) => lowerName(session) === lower)
  const prefixes = sessions.filter((session) => session.id.toLowerCase().startsWith(lower))
  if (target.length < MIN_TARGET_PREFIX_LENGTH && prefixes.length > 0) {
    if (names.length === 0) return { _tag: "PrefixTooShort", matches: prefixes }
    // A short string that is also a name: name and prefix matches are merged (C-TGT-5).
    const merged = uniqueById([...names, ...prefixes])
    if (merged.length === 1 && merged[0] !== undefined) return { _tag: "Found", session: merged[0] }
    return { _tag: "AmbiguousPrefix", matches: merged }
  }
  const longPrefixes = target.length >= MIN_TARGET_PREFIX_LENGTH ? prefixes : []
  const merged = uniqueById([...names, ...longPrefixes])
  if (merged.length === 1 && merged[0] !== undefined) return { _tag: "Found", session: merged[0] }
  if (merged.length === 0) return { _tag: "NotFound" }
  return names.length === merged.length
    ? { _tag: "AmbiguousName", matches: merged }
    : { _tag: "AmbiguousPrefix", matches: merged }
}

/** Length of the common prefix of two strings. */
const commonPrefix = (a: string, b: string): number => {
  const max = Math.min(a.length, b.length)
  let i = 0
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i
}

/**
 * The display targets of every session in `all` (C-TGT-6): for each, the
 * shortest id prefix of at least 8 characters that is unique among the ids
 * (ignoring case) and equal to no session's name; the full id when there is
 * none. O(n log n): in sorted order an id's prefix is unique exactly when it
 * is longer than what the id shares with either neighbour.
 *
 * @category targets
 * @since 0.1.0
 */
export const displayTargets = (all: ReadonlyArray<TargetIdentity>): (session: TargetIdentity) => string => {
  const names = new Set(all.map(lowerName).filter((name): name is string => name !== undefined))
  const sorted = all.map((session) => session.id.toLowerCase()).sort()
  const shared = new Map<string, number>()
  for (let i = 0; i < sorted.length; i++) {
    const id = sorted[i]!
    const before = i > 0 ? commonPrefix(sorted[i - 1]!, id) : 0
    const after = i + 1 < sorted.length ? commonPrefix(id, sorted[i + 1]!) : 0
    shared.set(id, Math.max(before, after, shared.get(id) ?? 0))
  }
  const targets = new Map<string, string>()
  return (session) => {
    const known = targets.get(session.id)
    if (known !== undefined) return known
    const id = session.id.toLowerCase()
    let target = session.id
    for (let length = Math.max(MIN_TARGET_PREFIX_LENGTH, (shared.get(id) ?? 0) + 1); length < id.length; length++) {
      if (!names.has(id.slice(0, length))) {
        target = session.id.slice(0, length)
        break
      }
    }
    targets.set(session.id, target)
    return target
  }
}

/**
 * The display target of one `session` among `all` (see `displayTargets`,
 * which computes them all at once).
 *
 * @category targets
 * @since 0.1.0
 */
export const displayTarget = (session: TargetIdentity, all: ReadonlyArray<TargetIdentity>): string =>
  displayTargets(all)(session)

const targetOptions = (matches: ReadonlyArray<TargetIdentity>, all: ReadonlyArray<TargetIdentity>): string => {
  const targetOf = displayTargets(all)
  return matches
    .map((session) => `${session.name?.trim() || session.id.slice(0, MIN_TARGET_PREFIX_LENGTH)} → ${targetOf(session)}`)
    .join(", ")
}

/**
 * The user-facing error for a resolution that is neither found nor absent.
 *
 * @category targets
 * @since 0.1.0
 */
export const resolutionFailure = (
  raw: string,
  resolution: Exclude<TargetResolution<TargetIdentity>, { readonly _tag: "Found" | "NotFound" }>,
  all: ReadonlyArray<TargetIdentity>
): string => {
  switch (resolution._tag) {
    case "AmbiguousName":
      return `Multiple sessions named "${raw}" are connected. Use the session ID instead.`
    case "AmbiguousPrefix":
      return `Target "${raw}" matches multiple sessions: ${
        resolution.matches.map((session) => `${session.name?.trim() || "unnamed"} (${session.id})`).join(", ")
      }. Use a longer session ID or an exact name.`
    case "PrefixTooShort":
      return `Target "${raw}" is too short. Use the displayed target from intercom list, such as ${
        targetOptions(resolution.matches, all)
      }.`
  }
}
