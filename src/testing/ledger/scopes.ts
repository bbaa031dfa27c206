/**
 * Scopes and groups on the wire: what a client reads from the broker stays
 * inside its session's scope (`scope-leak`), lists and membership frames
 * inside its group, and a message crosses groups only as a bound child's
 * supervisor-channel traffic or its supervisor's reply (`cross-group`).
 * Apart from the taps (wire.ts) and the broker frames they judge
 * (brokerFrames.ts), since these checks read only who is where (state.ts).
 */
import { crossesGroup, groupOf, knows, type LedgerState, type LinkRecord, mayCross, type MessageRecord, nameOf, scopeOf } from "./state.ts"
import { alias, check } from "./trace.ts"

/** What `link`'s session saw of `sessionId` (`what`, for the report) stays inside its scope (`scope-leak`). */
export const sameScope = (state: LedgerState, link: LinkRecord, sessionId: string, what: string): void => {
  if (!knows(state, sessionId)) return
  check(state, scopeOf(state, sessionId) === scopeOf(state, link.owner), "scope-leak", () =>
    `${nameOf(state, link.owner)} (scope ${scopeOf(state, link.owner) ?? "-"}) saw ${what} of ${nameOf(state, sessionId)} (scope ${
      scopeOf(state, sessionId) ?? "-"
    })`)
}

/** Lists and membership frames stay inside a group (no simulated session `peek`s at another group). */
export const sameGroup = (state: LedgerState, link: LinkRecord, sessionId: string, what: string): void => {
  check(state, !crossesGroup(state, sessionId, link.owner), "cross-group", () =>
    `${nameOf(state, link.owner)} [${groupOf(state, link.owner)}] saw ${what} of ${nameOf(state, sessionId)} [${
      groupOf(state, sessionId)
    }]`)
}

/**
 * C-GRP-12, C-SUP-13/14: a message from another group of the receiver's scope
 * is a bound child's broker-marked message to its supervisor, or the
 * supervisor's exact reverse reply; and the broker marks `channel:
 * "supervisor"` on exactly the former.
 */
export const groupCrossing = (
  state: LedgerState,
  link: LinkRecord,
  from: string,
  messageId: string,
  channel: "supervisor" | undefined,
  record: MessageRecord | undefined
): void => {
  const receiver = link.owner
  const describe = () =>
    `${record?.alias ?? alias(state, messageId)} from ${nameOf(state, from)} [${groupOf(state, from)}] to ${nameOf(state, receiver)} [${
      groupOf(state, receiver)
    }]`
  const marked = record?.channel === "supervisor" && state.sessions.get(from)?.supervisor === receiver
  check(state, (channel === "supervisor") === marked, "cross-group", () =>
    channel === "supervisor"
      ? `${describe()} came marked channel:"supervisor", but it is no bound child's supervisor_send to its supervisor`
      : `${describe()}, a bound child's supervisor_send, came without channel:"supervisor"`)
  if (!crossesGroup(state, from, receiver)) return
  check(state, record !== undefined && mayCross(state, record, receiver), "cross-group", () =>
    `${describe()} crossed groups: it is neither supervisor-channel traffic from a bound child nor the supervisor's reply to its ask`)
}
