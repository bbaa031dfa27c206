/**
 * What the pi extension's footer status line says (TUI and RPC only), and
 * the warnings about mail pi has not saved yet: pure text and one small
 * state, kept apart from the generation (generation.ts), whose status fiber
 * reads the client and the session and shows what this module decides.
 *
 * Why the warnings: until pi writes its session file, the client withholds
 * its confirmations and the broker keeps that mail; past
 * `unsavedMessageLimit` the client confirms it anyway (docs/pi.md). One
 * warning comes at half of the limit, another once the limit was passed.
 */
import type { ClientStatus, WithheldConfirmations } from "../client/IntercomClient.ts"
import type { TakenOver } from "../client/errors.ts"

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`

/** How to take a session back in pi after a takeover: the client's `takenOverHint`. */
export const TAKE_BACK_HINT = "Run /reload here to take it back."

const byPid = (takenOver: TakenOver): string => takenOver.pid === undefined ? "another process" : `pid ${takenOver.pid}`

/**
 * The notice shown once when another process took this session's intercom
 * id over (`takeover-v1`): typically the same pi session open in two pi
 * processes (`pi -c` or `pi --session` in two terminals).
 */
export const takenOverNotice = (takenOver: TakenOver): string =>
  `Intercom: this session was taken over by another process (${byPid(takenOver)}) using the same session id — ` +
  `probably this pi session is open twice. Intercom moved there: its messages go to that process, not this one, ` +
  `and intercom tool calls here fail until that process leaves or gives the session up (this one then takes it back by itself). ` +
  TAKE_BACK_HINT

/**
 * The warning shown when this generation found `count` undelivered messages
 * in the session's journal and leaves them to the live generation that holds
 * the client instance that received them (the session open twice,
 * instance.ts `liveInstances`).
 */
export const leftToOtherNotice = (count: number): string =>
  `Intercom: this session is open in another pi process too, which holds the intercom instance that received them: ` +
  `${plural(count, "message")} this session received earlier and did not show yet ` +
  `${count === 1 ? "is" : "are"} shown there, not here.`

/**
 * The footer status line: connection state (or that another process took
 * the session over), a wait in progress, pending asks, and the note on
 * unsaved mail (`unsavedText`), joined with ` · `.
 */
export const statusText = (
  connection: Pick<ClientStatus, "connected" | "takenOver">,
  waiting: boolean,
  pending: number,
  unsaved: string | undefined
): string => {
  const parts = [
    connection.takenOver !== undefined
      ? `intercom: taken over by ${byPid(connection.takenOver)} (/reload to take it back)`
      : connection.connected
      ? "intercom: connected"
      : "intercom: not connected"
  ]
  if (waiting) parts.push("waiting for a reply")
  if (pending > 0) parts.push(plural(pending, "pending ask"))
  if (unsaved !== undefined) parts.push(unsaved)
  return parts.join(" · ")
}

/**
 * The footer's note on mail pi has not saved yet: how many messages the
 * client withholds, or, once the limit made it confirm them, that they are
 * unsaved until the session file exists (`saved`).
 */
export const unsavedText = (withheld: WithheldConfirmations, saved: boolean): string | undefined =>
  withheld.withholding
    ? withheld.messages > 0 ? `${plural(withheld.messages, "message")} not saved yet` : undefined
    : withheld.limitReleased !== undefined && !saved
    ? "messages not saved: send a prompt"
    : undefined

/** The warning at half of `unsavedMessageLimit`: how many are held, why, and what to do. */
const holdingWarning = (held: number, limit: number): string =>
  `Intercom: ${plural(held, "received message")} not confirmed yet: pi has not saved this session ` +
  `(it writes the session file with the first prompt), so the broker keeps ${held === 1 ? "it" : "them"} in case pi ends first. ` +
  `Send a prompt to save the session. Past ${limit} (unsavedMessageLimit) they are confirmed anyway, and then only pi's memory holds them.`

/** The warning once the limit made the client confirm what pi has not saved. */
const releasedWarning = (released: number, limit: number): string =>
  `Intercom: more than ${limit} messages (unsavedMessageLimit) arrived while pi has not saved this session: ` +
  `the ${released} held, and what comes next, are confirmed once pi has them, so the broker no longer keeps them. ` +
  `Those pi has are in its memory only: a quit or crash before the first prompt loses them. Send a prompt to save the session.`

/**
 * Which warnings about unsaved mail are due, each once per generation: the
 * one at half of the limit while the client withholds, and the one after
 * the limit made it confirm, unless pi has saved the session by then.
 * Owned by the status fiber, the only caller of `due`.
 */
export class UnsavedWarnings {
  private readonly limit: number
  private readonly warnAt: number
  private warnedHolding = false
  private warnedReleased = false

  /** @param limit `unsavedMessageLimit`. */
  constructor(limit: number) {
    this.limit = limit
    this.warnAt = Math.ceil(limit / 2)
  }

  /** The warnings to show now, given what the client withholds and whether pi has saved the session. */
  due(withheld: WithheldConfirmations, saved: boolean): ReadonlyArray<string> {
    const due: Array<string> = []
    if (!this.warnedHolding && withheld.withholding && withheld.messages >= this.warnAt) {
      this.warnedHolding = true
      due.push(holdingWarning(withheld.messages, this.limit))
    }
    if (!this.warnedReleased && !saved && withheld.limitReleased !== undefined) {
      this.warnedReleased = true
      due.push(releasedWarning(withheld.limitReleased, this.limit))
    }
    return due
  }
}
