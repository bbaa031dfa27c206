/**
 * `runBroker`: the broker as a scoped Effect program. Startup follows P91;
 * closing the Scope is shutdown (P95).
 */
import { Data, Effect, type Scope } from "effect"
import type { BrokerStartupError } from "./errors.ts"
import type { BrokerOptions } from "./options.ts"

export interface BrokerHandle {
  readonly socketPath: string
  readonly pid: number
  /** Completes when the broker has been idle long enough to exit (P92); the owner then closes the Scope. */
  readonly idleExit: Effect.Effect<void>
  /** Live registered sessions right now. */
  readonly sessionCount: Effect.Effect<number>
}

class NotImplemented extends Data.TaggedError("NotImplemented")<{}> {}

export const runBroker = (_options: BrokerOptions): Effect.Effect<BrokerHandle, BrokerStartupError, Scope.Scope> =>
  Effect.die(new NotImplemented())
