/**
 * The ledger's trace: lines stamped with simulated time, violations recorded
 * in it, and stable names for random ids (message ids become `m1`, `m2`, …
 * and other UUIDs `u1`, `u2`, … by first appearance; a supervisor capability,
 * whose nonce the broker draws from `crypto`, `cap1`, …), so two runs of one
 * seed print the same trace.
 */
import type { LedgerState, LinkRecord } from "./state.ts"
import { nameOf } from "./state.ts"
import type { ViolationKind } from "./types.ts"

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g

/** A capability in a frame (`supervisor-v1`): `<nonce>.<mac>`, both base64url. */
const CAPABILITY = /"capability":"([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)"/g

const formatTime = (ms: number): string => `${(ms / 1000).toFixed(3).padStart(8)}s`

/** `text`, cut to `max` characters with an ellipsis. */
export const clip = (text: string, max = 40): string => text.length <= max ? text : `${text.slice(0, max - 1)}…`

/** `text` with every UUID and capability replaced by its stable alias. */
export const stableIds = (state: LedgerState, text: string): string =>
  text.replace(CAPABILITY, (_match, capability: string) => {
    let alias = state.otherIds.get(capability)
    if (alias === undefined) {
      alias = `cap${state.otherIds.size + 1}`
      state.otherIds.set(capability, alias)
    }
    return `"capability":"${alias}"`
  }).replace(UUID, (id) => {
    const message = state.messages.get(id)
    if (message !== undefined) return message.alias
    let alias = state.aliases.get(id) ?? state.otherIds.get(id)
    if (alias === undefined) {
      alias = `u${state.otherIds.size + 1}`
      state.otherIds.set(id, alias)
    }
    return alias
  })

/** Appends a trace line stamped with the simulated time. */
export const note = (state: LedgerState, line: string): void => {
  state.lines.push(`${formatTime(state.now())}  ${stableIds(state, line)}`)
}

/** Records a violation (and its trace line). */
export const violate = (state: LedgerState, kind: ViolationKind, message: string): void => {
  note(state, `!! ${kind}: ${message}`)
  state.found.push({ kind, at: state.now(), message, traceIndex: state.lines.length - 1 })
}

/** Counts one invariant check; records a violation when `ok` is false. */
export const check = (state: LedgerState, ok: boolean, kind: ViolationKind, message: () => string): boolean => {
  state.checkCount++
  if (!ok) violate(state, kind, message())
  return ok
}

/** A short stable name for a message id (`m<n>`, by first appearance). */
export const alias = (state: LedgerState, id: string): string => {
  const message = state.messages.get(id)
  if (message !== undefined) return message.alias
  let known = state.aliases.get(id)
  if (known === undefined) {
    known = `m${state.messages.size + state.aliases.size + 1}`
    state.aliases.set(id, known)
  }
  return known
}

/** With `traceFrames`, a trace line for one frame on `link`. */
export const traceFrame = (state: LedgerState, link: LinkRecord | undefined, arrow: string, text: string): void => {
  if (state.traceFrames) {
    note(
      state,
      `   ${link === undefined ? "?" : nameOf(state, link.owner)}#${link?.id ?? "?"} ${arrow} ${clip(stableIds(state, text), 200)}`
    )
  }
}
