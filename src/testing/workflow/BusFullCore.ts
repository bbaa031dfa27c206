/**
 * What the parts of the bus-hosted workflow world (`BusFull.ts`) share: the
 * workflow ledger every port writes to, the engine's Scope and fiber set
 * (the engine's work — foreground calls, parallel groups, stage closes —
 * lives there, outside every session generation, as an engine's does), the
 * bus ledger's names for message ids, and the broken build in force.
 *
 * Owned by one run; plain state read and written between two yields.
 */
import { Effect, FiberSet, type Scope } from "effect"
import type { BusFullBrokenBuild } from "./BusFullWorkload.ts"
import type { WorkflowLedger } from "./WorkflowLedger.ts"

/** The shared state of one bus-hosted workflow run. */
export interface BusFullCore {
  readonly ledger: WorkflowLedger
  readonly broken: BusFullBrokenBuild | undefined
  /** The engine's Scope: its services and parallel groups live here. */
  readonly scope: Scope.Scope
  /** The engine's fibers (foreground calls, group calls, stage closes). */
  readonly fibers: FiberSet.FiberSet<unknown, unknown>
  /** The bus ledger's stable name for a message id (`m7`), once the script has started. */
  alias: (id: string) => string
  /** Adds a line to the bus trace, once the script has started. */
  note: (text: string) => void
}

/** Runs `effect` as one of the engine's fibers (it ends with the engine's Scope). */
export const spawnEngine = (core: BusFullCore, effect: Effect.Effect<unknown, unknown>): Effect.Effect<void> =>
  Effect.asVoid(FiberSet.run(core.fibers, effect))
