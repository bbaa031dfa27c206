/**
 * `intercom ui` as one Effect: the server (UiServer.ts), the live view
 * (LiveView.ts) following the broker through observe-v1 (ObservedInput.ts),
 * and the hub between them, all in the caller's Scope. Closing the Scope
 * (Ctrl-C) ends the event streams, the server and the broker connection.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import { makeToken } from "./Access.ts"
import { LIVE_VIEW_DEFAULTS, runLiveView } from "./LiveView.ts"
import { staleAfterMs } from "../observe/Snapshot.ts"
import { observedInputs } from "./ObservedInput.ts"
import { makeViewHub, serveUi, type UiServeError, type UiServer } from "./UiServer.ts"

/** What `intercom ui` was asked for. */
export interface UiOptions {
  /** The broker socket to observe. */
  readonly socketPath: string
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  readonly port: number
  /** An ask open this long is shown as stuck. */
  readonly stuckAfterMs: number
  /** How often the broker sends what changed (observe-v1 watch interval). */
  readonly intervalMs: number
}

/** Default stuck threshold: 30 s. */
export const DEFAULT_STUCK_AFTER_MS = 30_000
/** Default watch interval: 500 ms. */
export const DEFAULT_UI_INTERVAL_MS = 500

/**
 * Starts the server and the live view in the current Scope and returns the
 * running server; the live view runs until the Scope closes.
 */
export const startUi = (options: UiOptions): Effect.Effect<UiServer, UiServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const hub = yield* makeViewHub()
    const token = makeToken()
    yield* Effect.forkScoped(runLiveView({
      source: observedInputs({ socketPath: options.socketPath, intervalMs: options.intervalMs }),
      hub,
      stuckAfterMs: options.stuckAfterMs,
      socketPath: options.socketPath,
      ...LIVE_VIEW_DEFAULTS,
      staleAfter: Duration.millis(staleAfterMs(options.intervalMs))
    }))
    return yield* serveUi({ port: options.port, token, views: hub })
  })

/**
 * Runs `intercom ui` until interrupted: prints the URL (the only line of
 * stdout), says what it watches (`note`: a line for the person, on stderr),
 * then serves. `print` writes the URL line to stdout; the CLI's fails when
 * stdout does not take it (src/cli/stdout.ts), which ends the UI, as nobody
 * could read its URL. Nothing else goes to stdout, so a reader that took the
 * URL and left (`intercom ui | head -1`) ends nothing.
 */
export const runUi = <E>(
  options: UiOptions,
  print: (line: string) => Effect.Effect<void, E>,
  note: (line: string) => Effect.Effect<void>
): Effect.Effect<never, UiServeError | E> =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* startUi(options)
    yield* print(`intercom ui: ${server.url}`)
    yield* note(
      `Watching the broker on ${options.socketPath}; asks open ${Duration.format(Duration.millis(options.stuckAfterMs))} or longer show as stuck. Ctrl-C stops.`
    )
    return yield* Effect.never
  }))
