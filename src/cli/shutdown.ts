/**
 * Bounded shutdown. Closing the broker's Scope runs its finalizers; one that
 * never completes (say, a server close waiting for a connection nobody
 * destroys) would leave a process behind that no longer listens and never
 * exits. The foreground broker gives its shutdown a grace period instead.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { EXIT_FAILURE, ExitCode } from "./exit.ts"

/**
 * Like `Effect.scoped`, except that closing the Scope may take at most
 * `grace`. The body stays interruptible (a signal interrupts it, then the
 * Scope closes). If closing takes longer, a warning is logged and the result
 * is `ExitCode(1)`; the unfinished finalizers are abandoned, and runMain exits
 * the process.
 */
export const scopedWithGrace = (grace: Duration.Input) =>
<A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | ExitCode, Exclude<R, Scope.Scope>> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const exit = yield* Effect.exit(restore(Scope.provide(body, scope)))
      // The close and its watchdog run in their own fibers: this one may
      // already be interrupted (SIGTERM), and must still wait for them.
      const closing = yield* Effect.forkDetach(Scope.close(scope, exit))
      const watchdog = yield* Effect.forkDetach(
        Effect.interruptible(Effect.timeoutOption(Fiber.await(closing), grace))
      )
      if (Option.isNone(yield* Fiber.join(watchdog))) {
        yield* Effect.logWarning(
          `Shutdown did not finish within ${Duration.format(Duration.fromInputUnsafe(grace))}; exiting anyway`
        )
        return yield* new ExitCode({ code: EXIT_FAILURE })
      }
      return yield* exit
    })
  )
