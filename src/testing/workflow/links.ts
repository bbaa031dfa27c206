/**
 * What the workflow world's agents share: the ledger, the fiber set every
 * world action runs in, and the simulated link between an agent and its
 * foreground child, whose detach requests and acknowledgements the faults
 * drop or delay (the detach frames travel over the bus, so a dropped
 * connection or a slow reader loses or delays them).
 *
 * Owned by one workflow world; plain synchronous state read and written
 * between two yields.
 */
import { Effect, FiberSet } from "effect"
import type { WorkflowLedger } from "./WorkflowLedger.ts"

/**
 * A deliberately broken composition, for proving that an invariant catches
 * what it claims to (docs/testing.md, "Workflow simulation"):
 *
 * - `barrier-without-prelude`: terminals skip the barrier's claim (a barrier
 *   whose selector matches nothing): caught by `wf-terminal-order`;
 * - `publish-before-drain`: a stage publishes its snapshot before `close`
 *   has drained it: caught by `wf-snapshot-early`;
 * - `close-without-drain`: a stage's close tears the generation down
 *   instead of draining it: caught by `wf-lost-at-close`;
 * - `handshake-ignores-generation`: a reload does not renew the detach
 *   handshake, so acknowledgements of the old generation still count:
 *   caught by `wf-stale-ack`;
 * - `unshared-late-ask-claims`: a second late-ask listener keeps its own
 *   claims: caught by `wf-late-ask`.
 *
 * @since 0.1.0
 */
export type WorkflowBrokenBuild =
  | "barrier-without-prelude"
  | "publish-before-drain"
  | "close-without-drain"
  | "handshake-ignores-generation"
  | "unshared-late-ask-claims"

/** Every broken build, for sweeps. */
export const WORKFLOW_BROKEN_BUILDS: ReadonlyArray<WorkflowBrokenBuild> = [
  "barrier-without-prelude",
  "publish-before-drain",
  "close-without-drain",
  "handshake-ignores-generation",
  "unshared-late-ask-claims"
]

/** The faults the world applies right now; the workload sets them. */
export interface WorkflowFaults {
  /** Detach frames (requests and acks) still to drop. */
  dropFrames: number
  /** Detach frames still to delay past the handshake's phase timeout. */
  delayFrames: number
  /** The parent's next hand-over is refused after this many items. */
  refuseAfter: number | undefined
}

/** How long a detach frame takes across the bus. */
export const FRAME_MS = 2

/** How long a delayed detach frame takes: past the 50 ms phase timeout. */
export const DELAYED_FRAME_MS = 80

/** What every part of the world shares. */
export interface WorldCore {
  readonly ledger: WorkflowLedger
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  readonly faults: WorkflowFaults
  readonly broken: WorkflowBrokenBuild | undefined
  /** A fresh message label (`m1`, `m2`, …). */
  readonly nextLabel: (prefix?: string) => string
}

/** Runs `effect` as a fiber of the world (it ends with the world). */
export const spawn = (core: WorldCore, effect: Effect.Effect<unknown, unknown>): Effect.Effect<void> =>
  Effect.asVoid(FiberSet.run(core.fibers, effect))

/**
 * Sends one detach frame across the simulated link: dropped or delayed when
 * a fault says so, otherwise handed over at once (in its own fiber).
 */
export const transmit = (core: WorldCore, what: string, deliver: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { faults, ledger } = core
    if (faults.dropFrames > 0) {
      faults.dropFrames--
      ledger.note(`   link drops ${what}`)
      return Effect.void
    }
    if (faults.delayFrames > 0) {
      faults.delayFrames--
      ledger.note(`   link delays ${what} by ${DELAYED_FRAME_MS} ms`)
      return spawn(core, Effect.andThen(Effect.sleep(DELAYED_FRAME_MS), deliver))
    }
    ledger.note(`   ${what}`)
    return spawn(core, Effect.andThen(Effect.sleep(FRAME_MS), deliver))
  })
