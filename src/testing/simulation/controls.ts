/**
 * Cancels and supersedes of a session's recent sends (`cancel_message`, a
 * send's `supersedes`; P71–P73) in generated workloads: the `Control` op, and
 * the draw the `CustodyHold` and `ParkedFlush` ops make for their own. How
 * each is drawn, printed and run; Workload.ts adds the controls to a
 * workload, workload/plainOps.ts prints and runs them.
 *
 * Why: the broker keeps a `message_control` behind the message it is about
 * wherever that message still waits for its receiver — a takeover's custody
 * hold, the receiver's parked mailbox flush, an outbox its session was taken
 * from (ControlFrame.ts, docs/protocol.md "Receipts and control"). Before
 * this only the hostile workload cancelled, and only mail of its own, so
 * sweeps almost never sent a control to a live receiver. The ledger judges
 * the order (ledger/controls.ts: `control-before-message`, `cancel-unheard`).
 *
 * The `Control` op follows a `Send` a few milliseconds later, by the same
 * session, in about CONTROL_CHANCE of the sends of every workload (unless
 * `WorkloadOptions.controls` is false): that send's sender cancels or
 * supersedes its latest acknowledged send (usually that one), while the
 * message is as likely as any other to be still on its way. Drawn from a
 * stream of its own (`Prng.derive(seed, "control")`) after every other op is
 * in place, so no other draw shifts.
 */
import { Effect, Schema } from "effect"
import { Prng } from "../Prng.ts"
import type { SimSession } from "./types.ts"

/** A cancel or a supersede. */
export const ControlAction = Schema.Literals(["cancel", "supersede"])
/** A drawn action. */
export type ControlAction = typeof ControlAction.Type

/** The fields of a `Control` op: `from` cancels or supersedes its `back`-th latest acknowledged send. */
export const ControlFields = {
  from: Schema.Int,
  action: ControlAction,
  back: Schema.Int
}

/** A drawn `Control`. */
export interface ControlDraw {
  readonly _tag: "Control"
  readonly after: number
  readonly from: number
  readonly action: ControlAction
  readonly back: number
}

/** How often a `Send` is followed by a `Control` of its sender. */
export const CONTROL_CHANCE = 0.1

/**
 * `ops` with a `Control` after about CONTROL_CHANCE of its `Send`s (see the
 * module header); the other ops unchanged and in order.
 */
export const withControls = <Op extends { readonly _tag: string }>(
  seed: number,
  ops: ReadonlyArray<Op>,
  isSend: (op: Op) => number | undefined
): ReadonlyArray<Op | ControlDraw> => {
  const prng = Prng.derive(seed, "control")
  const out: Array<Op | ControlDraw> = []
  for (const op of ops) {
    out.push(op)
    const from = isSend(op)
    if (from === undefined || !prng.chance(CONTROL_CHANCE)) continue
    out.push({
      _tag: "Control",
      after: prng.int(0, 30),
      from,
      action: prng.chance(0.5) ? "cancel" : "supersede",
      back: prng.chance(0.75) ? 0 : prng.int(1, 3)
    })
  }
  return out
}

/** Which recent send `back` picks, printed: `latest send`, `latest send but 2`. */
export const recentSend = (back: number): string => back === 0 ? "latest send" : `latest send but ${back}`

/** A `Control`, printed (`name` is its session's). */
export const formatControl = (op: ControlDraw, name: string): string =>
  `${name} ${op.action === "cancel" ? "cancels" : "supersedes"} its ${recentSend(op.back)}`

/** The text of a superseding message: op number `counter`, from `from`. */
export const supersedeText = (counter: number, from: string): string => `supersede ${counter} ${from}`

/**
 * How long an op that builds a hard order waits for the broker's answer to
 * its control before it goes on: long enough for an answer the broker gives
 * at once to be read before the op's next step (a stop, a kill) would
 * interrupt the wait, short enough that a held sender's next step still
 * comes while the hold lasts (a held sender's supersede is answered only
 * once the hold ends).
 */
const CONTROL_ANSWER_WAIT = "300 millis"

/**
 * `session` cancels or supersedes its `back`-th latest acknowledged send
 * (to `to` when given); a superseding message's text names op `counter`.
 * With `answered`, waits (at most CONTROL_ANSWER_WAIT) for the broker's
 * answer, so the op's next step (a stop, a kill) does not interrupt it.
 */
export const runControl = (
  session: SimSession,
  action: ControlAction,
  back: number,
  counter: number,
  to?: string,
  answered = false
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const pending = yield* action === "cancel"
      ? session.cancelRecent(back, to)
      : session.supersedeRecent(back, supersedeText(counter, session.name), to)
    if (answered && pending !== undefined) yield* pending.result(CONTROL_ANSWER_WAIT)
  })

/**
 * What an op that builds a hard order (`CustodyHold`, `ParkedFlush`) does
 * about one of its own messages, drawn last from that op's stream so its
 * other fields stay as they were: a cancel, a supersede or nothing, and how
 * far back (0 to `upTo`).
 */
export const drawOpControl = (prng: Prng, upTo: number): { readonly control: ControlAction | "none"; readonly controlBack: number } => ({
  control: prng.weighted({ cancel: 4, supersede: 4, none: 2 }),
  controlBack: prng.int(0, upTo)
})
