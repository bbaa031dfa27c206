/**
 * `intercom top`: a live terminal view of a running broker, read through
 * `ObserveClient.watch` (`observe-v1`). One fiber folds three streams — the
 * broker's updates, key presses and terminal resizes — into the current
 * snapshot and view settings, and redraws the screen after each. `--once`
 * prints one snapshot (as JSON with `--json`) and exits, for scripts.
 *
 * The screen is the terminal's alternate screen while the view runs, and
 * the terminal is given back (main screen, cursor, cooked mode) when it ends
 * — by `q`, Ctrl+C, or the broker going away (then the error is printed).
 *
 * A broker sends its watch an update every interval, so one that sends
 * nothing for `staleAfterMs` (three intervals, at least 3 s) while its
 * socket stays open is stopped (SIGSTOP), hung or overloaded: a clock tick
 * every second redraws the screen, which then says so above the last update.
 */
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { Clock, Duration, Effect, Option, Ref, Stream } from "effect"
import type { PlatformError } from "effect/PlatformError"
import type { Terminal } from "effect/Terminal"
import { ObserveClient, type ObserveError } from "../../observe/ObserveClient.ts"
import { applyEvent, type BrokerSnapshot, isObserveEvent, type ObserveEvent, staleAfterMs } from "../../observe/Snapshot.ts"
import type { ExitCode } from "../exit.ts"
import { printOrQuit } from "../stdout.ts"
import { step } from "./keys.ts"
import { initialSettings, render, type ViewSettings } from "./view.ts"

/** What `intercom top` was asked for. */
export interface TopOptions {
  /** The agent dir (`--dir`). */
  readonly dir: string | undefined
  /** Milliseconds between updates (`--interval`). */
  readonly intervalMs: number
  /** Print one snapshot and exit (`--once`). */
  readonly once: boolean
  /** With `once`: the snapshot as one line of JSON (`--json`). */
  readonly json: boolean
}

/** The alternate screen with the cursor hidden, and back. */
const ENTER_SCREEN = "\u001b[?1049h\u001b[?25l"
const LEAVE_SCREEN = "\u001b[?25h\u001b[?1049l"
/** Cursor home, then clear to the end of the screen. */
const HOME_AND_CLEAR = "\u001b[H\u001b[J"

/** Width and height assumed when the output is not a terminal (`--once` into a pipe). */
const PLAIN_SIZE = { columns: 160, rows: 1000 }

type Action =
  | { readonly type: "update"; readonly element: BrokerSnapshot | ObserveEvent; readonly at: number }
  | { readonly type: "tick"; readonly at: number }
  | { readonly type: "key"; readonly input: string | undefined; readonly name: string; readonly ctrl: boolean }
  | { readonly type: "size"; readonly columns: number; readonly rows: number }
  | { readonly type: "quit" }

interface Screen {
  readonly snapshot: BrokerSnapshot | undefined
  readonly settings: ViewSettings
  readonly size: { readonly columns: number; readonly rows: number }
  /** This process's clock at the last update from the broker, and now (the last update or tick). */
  readonly updatedAt: number
  readonly now: number
}

/** How often the screen is redrawn with no update, so that a silent broker is noticed. */
const TICK = Duration.seconds(1)

const TITLE = "intercom top"

/** The screen after `action`, or undefined to quit. */
const next = (screen: Screen, action: Action): Screen | undefined => {
  switch (action.type) {
    case "update": {
      const element = action.element
      const timed = { ...screen, updatedAt: action.at, now: action.at }
      if (!isObserveEvent(element)) return { ...timed, snapshot: element }
      return screen.snapshot === undefined ? timed : { ...timed, snapshot: applyEvent(screen.snapshot, element) }
    }
    case "tick":
      return { ...screen, now: action.at }
    case "key": {
      const settings = step(screen.settings, action)
      return settings === "quit" ? undefined : { ...screen, settings }
    }
    case "size":
      return { ...screen, size: { columns: action.columns, rows: action.rows } }
    case "quit":
      return undefined
  }
}

/**
 * The live view of `updates` (a watch with `intervalMs`) in `terminal` until
 * `q`, Ctrl+C or Ctrl+D, or until `updates` fails.
 */
export const liveScreen = <E>(
  terminal: Terminal,
  updates: Stream.Stream<BrokerSnapshot | ObserveEvent, E>,
  intervalMs: number
): Effect.Effect<void, E | PlatformError> =>
  Effect.scoped(Effect.gen(function*() {
    const keys = Stream.fromQueue(yield* terminal.readInput).pipe(
      Stream.map((input): Action => ({
        type: "key",
        input: Option.getOrUndefined(input.input),
        name: input.key.name,
        ctrl: input.key.ctrl
      })),
      // Input that ends (Ctrl+C, Ctrl+D, stdin closed) ends the view.
      Stream.concat(Stream.make<Array<Action>>({ type: "quit" }))
    )
    const sizes = Stream.fromQueue(yield* terminal.size).pipe(
      Stream.map((size): Action => ({ type: "size", columns: size.columns, rows: size.rows }))
    )
    const updated = updates.pipe(
      Stream.mapEffect((element) => Effect.map(Clock.currentTimeMillis, (at): Action => ({ type: "update", element, at })))
    )
    const ticks = Stream.tick(TICK).pipe(
      Stream.mapEffect(() => Effect.map(Clock.currentTimeMillis, (at): Action => ({ type: "tick", at })))
    )
    const started = yield* Clock.currentTimeMillis
    const screen = yield* Ref.make<Screen>({
      snapshot: undefined,
      settings: initialSettings,
      size: { columns: yield* terminal.columns, rows: yield* terminal.rows },
      updatedAt: started,
      now: started
    })
    const staleMs = staleAfterMs(intervalMs)
    const draw = (current: Screen) => {
      const silentFor = current.now - current.updatedAt
      return terminal.display(
        HOME_AND_CLEAR +
          (current.snapshot === undefined
            ? `${TITLE}: waiting for the broker…`
            : render(current.snapshot, current.settings, current.size, TITLE, silentFor >= staleMs ? silentFor : undefined)
              .join("\r\n"))
      )
    }
    yield* Effect.acquireRelease(terminal.display(ENTER_SCREEN), () => Effect.ignore(terminal.display(LEAVE_SCREEN)))
    yield* draw(yield* Ref.get(screen))
    // The updates end the merge when they fail; the ticks never end it.
    yield* Stream.mergeAll([updated, keys, sizes, ticks], { concurrency: "unbounded" }).pipe(
      Stream.mapEffect((action) =>
        Effect.flatMap(Ref.get(screen), (current) => {
          const after = next(current, action)
          if (after === undefined) return Effect.succeed(false)
          return Ref.set(screen, after).pipe(Effect.andThen(draw(after)), Effect.as(true))
        })
      ),
      Stream.takeWhile((going) => going),
      Stream.runDrain
    )
  }))

/** `intercom top`: see the module header. */
export const runTop = (options: TopOptions): Effect.Effect<void, ObserveError | PlatformError | ExitCode> =>
  Effect.gen(function*() {
    if (options.once) {
      const snapshot = yield* ObserveClient.snapshot({ dir: options.dir })
      // Through stdout.ts: a full disk is exit 1, a pipe's reader gone (`| head -1`) a quiet exit 0.
      if (options.json) return yield* printOrQuit(JSON.stringify(snapshot))
      return yield* printOrQuit(render(snapshot, initialSettings, PLAIN_SIZE, TITLE, undefined, false).join("\n"))
    }
    // Only Ctrl+C and Ctrl+D end key input: Esc is the filter's (keys.ts).
    const terminal = yield* NodeTerminal.make((input) => input.key.ctrl && (input.key.name === "c" || input.key.name === "d"))
    yield* liveScreen(terminal, ObserveClient.watch({ dir: options.dir, intervalMs: options.intervalMs }), options.intervalMs)
  }).pipe(Effect.scoped)
