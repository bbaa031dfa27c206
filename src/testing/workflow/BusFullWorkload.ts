/**
 * The operations of the whole workflow layer on the bus (`BusFull.ts`): a
 * parent `P` hosted by `makeParentSession`, its background children `C1`,
 * `C2`, a foreground child `F1`, a foreground parallel group `F2`–`F4`, a
 * stage session `Stage` hosted by `Stages`, a peer `Peer` talking to the
 * stage and the stage's foreground child `Worker` — and the bus's faults. Plain data,
 * generated from a seed: the same list for the same seed.
 */
import { Schema } from "effect"
import type { ViolationKind } from "../Ledger.ts"
import { Prng } from "../Prng.ts"
import type { WorkflowBrokenBuild } from "./links.ts"

/** The parent's children that stay in the background (bus session names). */
export const FULL_BACKGROUND: ReadonlyArray<string> = ["C1", "C2"]
/** The child the parent runs alone in its foreground. */
export const FULL_FOREGROUND = "F1"
/** The members of the parent's foreground parallel group. */
export const FULL_GROUP: ReadonlyArray<string> = ["F2", "F3", "F4"]
/** Every child of the parent (delegated children, `supervisor-v1`). */
export const FULL_CHILDREN: ReadonlyArray<string> = [...FULL_BACKGROUND, FULL_FOREGROUND, ...FULL_GROUP]
/** The stage session, its peer and its foreground child. */
export const FULL_STAGE = { session: "Stage", peer: "Peer", child: "Worker", stageId: "s1", runId: "run-1" } as const
/** Every session of the world, the parent first. */
export const FULL_SESSIONS: ReadonlyArray<string> = ["P", ...FULL_CHILDREN, FULL_STAGE.session, FULL_STAGE.peer, FULL_STAGE.child]

/** A child's delivery modes, by weight: `passive` one time in five. */
const DELIVERIES: ReadonlyArray<"steer" | "queue" | "passive"> = ["steer", "queue", "steer", "queue", "passive"]

const Int = Schema.Int
const SideSchema = Schema.Literals(["client", "broker"])

/** One kind of operation: its `_tag`, its fields, and `pauseMs`. */
const fullOp = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.Literal(tag), ...fields, pauseMs: Int })

/**
 * One operation, after `pauseMs` of simulated time. A Schema, so that a
 * failing seed's workload, printed as JSON, runs again (`npm run sim --
 * --workflow-bus-full --seed S --replay JSON`).
 */
export const BusFullOpSchema = Schema.Union([
  fullOp("send", { child: Schema.String, delivery: Schema.Literals(["steer", "queue", "passive"]) }),
  fullOp("progress", { child: Schema.String }),
  /** The child asks the parent (ask/reply over the broker). */
  fullOp("ask", { child: Schema.String }),
  /** The parent's model answers the oldest ask it has seen and not answered. */
  fullOp("answer", {}),
  fullOp("terminal", { child: Schema.String }),
  fullOp("busy", { busy: Schema.Boolean }),
  /** `F1` runs in the parent's foreground (a `subagent` call); `unavailable`: its responder never answers (C-ORD-11). */
  fullOp("foreground", { unavailable: Schema.Boolean }),
  /** `F2`–`F4` run as a foreground parallel group, `concurrency` at once (C-ORD-21, C-ORD-22). */
  fullOp("group", { concurrency: Int }),
  fullOp("stage-open", {}),
  fullOp("stage-busy", { busy: Schema.Boolean }),
  /** `Worker` runs in the stage's foreground; `unavailable`: every handshake waits out its 50 ms phase. */
  fullOp("stage-foreground", { unavailable: Schema.Boolean }),
  /** The peer or the stage's foreground child sends the stage session a message or an ask over the bus. */
  fullOp("stage-send", { from: Schema.Literals(["peer", "child"]), ask: Schema.Boolean }),
  /** The engine closes the stage: drain, terminal snapshot, retire. */
  fullOp("stage-close", {}),
  /** The stage's retained conversation is gone: late asks get the correlated replyError (C-ORD-8). */
  fullOp("retained-gone", {}),
  fullOp("crash", { downMs: Int }),
  /**
   * The parent's session generation is replaced inside its process (a reload), when no subagent call
   * holds it (`parentReloads`); each generation keeps a `ParentJournal`.
   */
  fullOp("reload", {}),
  fullOp("drop", { who: Schema.String, side: SideSchema }),
  fullOp("stall", { who: Schema.String, side: SideSchema, forMs: Int })
])

/** One operation (see `BusFullOpSchema`). */
export type BusFullOp = typeof BusFullOpSchema.Type

/**
 * The broken builds this world runs: four of the workflow world's
 * (`links.ts`) — `barrier-without-prelude` (`wf-terminal-order`),
 * `publish-before-drain` (`wf-snapshot-early`), `close-without-drain`
 * (`wf-lost-at-close`), `unshared-late-ask-claims` (`wf-late-ask`); its
 * fifth, `handshake-ignores-generation`, needs a runtime-generation reload
 * of the parent, which this world does not do — and three engine
 * compositions of its own:
 *
 * - `passive-dropped`: the engine's `passive` port drops the message
 *   instead of showing it: caught by `wf-lost`;
 * - `deliver-twice`: the parent's host hands every message to the workflow
 *   parent twice (a host without the session runtime's de-duplication):
 *   caught by `wf-duplicate`;
 * - `launch-skipped`: the engine launches the members its parallel group
 *   skipped once the group call returns: caught by `wf-skipped-launched`;
 * - `journal-without-marks` (with parent reloads only, so not in
 *   `BUS_FULL_BROKEN_BUILDS`): the parent's journal never hears what the
 *   agent took, and a reload hands it over again: caught by `wf-duplicate`.
 */
export type BusFullBrokenBuild =
  | Exclude<WorkflowBrokenBuild, "handshake-ignores-generation">
  | "passive-dropped"
  | "deliver-twice"
  | "launch-skipped"
  | "journal-without-marks"

/** Every broken build of this world, for sweeps. */
export const BUS_FULL_BROKEN_BUILDS: ReadonlyArray<BusFullBrokenBuild> = [
  "barrier-without-prelude",
  "publish-before-drain",
  "close-without-drain",
  "unshared-late-ask-claims",
  "passive-dropped",
  "deliver-twice",
  "launch-skipped"
]

/** Settings of one run. */
export interface BusFullConfig {
  readonly seed: number
  /** Operations to generate when none are given. Default 40. */
  readonly ops?: number | undefined
  readonly broken?: BusFullBrokenBuild | undefined
  /** How long the healed world settles before the final checks (ms). Default 15,000. */
  readonly settleMs?: number | undefined
  /** The parent's `busySteer`; default drawn from the seed (half each). */
  readonly busySteer?: "steer" | "queue" | undefined
  /** The broker's durability; default drawn from the seed (half each). */
  readonly durability?: "durable" | "memory" | undefined
  /** The generated workload also reloads the parent (`reload`). Default false. */
  readonly parentReloads?: boolean | undefined
  /** `--strict`: the bus ledger counts messages lost in flight to a dying receiver as violations. Default false. */
  readonly strictInFlight?: boolean | undefined
  /** `--tolerate`: bus violation kinds reported without failing the run. Default none. */
  readonly tolerate?: ReadonlyArray<ViolationKind> | undefined
}

/**
 * A seeded workload. The stage opens first (sometimes busy); the rest is
 * drawn: children's sends, progress, asks and terminals, the parent's
 * answers and busy/idle turns, the foreground child and the parallel group,
 * the stage's traffic, foreground child, close and late asks (after close
 * every `stage-send` ask is a late ask), and broker crashes, drops and
 * stalls. A close is often right behind a message from `Worker`, so that
 * it races the message's handshake.
 */
export const generateBusFullWorkload = (
  seed: number,
  count = 40,
  options: { readonly parentReloads?: boolean | undefined } = {}
): ReadonlyArray<BusFullOp> => {
  const prng = Prng.derive(seed, "bus-workflow-full")
  const ops: Array<BusFullOp> = [{ _tag: "stage-open", pauseMs: 0 }]
  if (prng.chance(0.5)) ops.push({ _tag: "stage-busy", busy: true, pauseMs: 0 })
  for (let i = 0; i < count; i++) {
    const pauseMs = prng.chance(0.6) ? prng.int(0, 20) : prng.int(50, 2500)
    const kind = prng.weighted({
      send: 6,
      progress: 2,
      ask: 2,
      answer: 2,
      terminal: 3,
      busy: 3,
      foreground: 1,
      group: 1,
      stageBusy: 2,
      stageForeground: 1,
      stageSend: 5,
      stageClose: 1,
      retainedGone: 0.3,
      crash: 1,
      drop: 2,
      stall: 1,
      // A weight of 0 is never drawn and leaves the others' draws as they were.
      reload: options.parentReloads === true ? 1 : 0
    })
    switch (kind) {
      case "send":
        ops.push({ _tag: "send", child: prng.pick(FULL_CHILDREN), delivery: prng.pick(DELIVERIES), pauseMs })
        break
      case "progress":
        ops.push({ _tag: "progress", child: prng.pick(FULL_CHILDREN), pauseMs })
        break
      case "ask":
        ops.push({ _tag: "ask", child: prng.pick(FULL_CHILDREN), pauseMs })
        break
      case "answer":
        ops.push({ _tag: "answer", pauseMs })
        break
      case "terminal":
        ops.push({ _tag: "terminal", child: prng.pick(FULL_CHILDREN), pauseMs })
        break
      case "busy":
        ops.push({ _tag: "busy", busy: prng.chance(0.6), pauseMs })
        break
      case "foreground":
        ops.push({ _tag: "foreground", unavailable: prng.chance(0.3), pauseMs })
        break
      case "group":
        ops.push({ _tag: "group", concurrency: prng.int(1, 2), pauseMs })
        break
      case "stageBusy":
        ops.push({ _tag: "stage-busy", busy: prng.chance(0.6), pauseMs })
        break
      case "stageForeground":
        ops.push({ _tag: "stage-foreground", unavailable: prng.chance(0.5), pauseMs })
        break
      case "stageSend":
        ops.push({ _tag: "stage-send", from: prng.chance(0.7) ? "peer" : "child", ask: prng.chance(0.4), pauseMs })
        break
      case "stageClose":
        if (prng.chance(0.6)) {
          // Race the close against a message in its handshake (C-ORD-2, C-ORD-3).
          ops.push({ _tag: "stage-foreground", unavailable: true, pauseMs })
          ops.push({ _tag: "stage-busy", busy: true, pauseMs: 0 })
          ops.push({ _tag: "stage-send", from: "child", ask: false, pauseMs: 0 })
          ops.push({ _tag: "stage-close", pauseMs: prng.int(0, 40) })
        } else {
          ops.push({ _tag: "stage-close", pauseMs })
        }
        break
      case "retainedGone":
        ops.push({ _tag: "retained-gone", pauseMs })
        break
      case "crash":
        ops.push({ _tag: "crash", downMs: prng.int(100, 3000), pauseMs })
        break
      case "drop":
        ops.push({ _tag: "drop", who: prng.pick(FULL_SESSIONS), side: prng.chance(0.5) ? "client" : "broker", pauseMs })
        break
      case "stall":
        ops.push({
          _tag: "stall",
          who: prng.pick(FULL_SESSIONS),
          side: prng.chance(0.5) ? "client" : "broker",
          forMs: prng.int(100, 2000),
          pauseMs
        })
        break
      case "reload":
        ops.push({ _tag: "reload", pauseMs })
        break
    }
  }
  return ops
}
